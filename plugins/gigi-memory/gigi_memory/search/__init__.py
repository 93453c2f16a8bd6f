"""Reading what memory holds: the ``memory.count|search|recent`` actions, their SQL, the full-text
ranking, the vector path and the retriever the kernel's engine asks."""
