"""Per-member export and delete, the guild purge, and what a member's erasure removes beyond
their ids (copies in memory, their names in free text)."""
