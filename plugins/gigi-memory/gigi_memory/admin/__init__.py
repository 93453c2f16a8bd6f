"""Running memory: the ``/memory enable|disable|status|purge|policy`` actions and ``gigi memory ...``
from a shell, with the progress a waiting sync shows."""
