"""Which failures of a batch the writer retries (the database away) and which it drops the
one bad operation for (retrying cannot fix them)."""

from __future__ import annotations

from sqlalchemy import exc as sa_exc

POISON = (
    sa_exc.IntegrityError,
    sa_exc.DataError,
    sa_exc.ProgrammingError,
    ValueError,
    TypeError,
    UnicodeError,
)


class Retry(Exception):
    """A batch failed for a reason waiting may fix; ``error`` is the class, for the stats."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def transient(exc: BaseException) -> bool:
    """Whether waiting and retrying may help (a connection lost, a lock, a server restart)."""
    if isinstance(exc, POISON):
        return False
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(
        exc,
        (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.DBAPIError, OSError, TimeoutError),
    )
