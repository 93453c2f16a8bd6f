"""Per-member export and deletion, and guild purges (``kernel.privacy``)."""
