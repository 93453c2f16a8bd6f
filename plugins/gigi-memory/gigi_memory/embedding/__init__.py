"""Search by meaning's half of the store: the ``memory.embed`` job, the claims that share it between
workers, and the segments and vectors it writes."""
