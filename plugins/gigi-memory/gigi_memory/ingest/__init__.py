"""A message's way in: the event gate, the queued operations, redaction, the batching writer and its
statements, and history brought in by ``/memory sync`` and ``gigi memory import``."""
