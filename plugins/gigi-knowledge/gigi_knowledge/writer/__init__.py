"""An extraction into rows: the writes planned under the guild lock, entity dedup, notes, the
per-process caches they read, and the batcher that commits many in one transaction."""
