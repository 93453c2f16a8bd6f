"""Reading what knowledge holds: ``/knowledge decisions|actions``, the retriever the kernel's engine
asks, the PostgreSQL vector path and ``since:`` arguments."""
