"""Async engine and sessions for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gigi_core.errors import StoreError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession


def resolve_url(database_url: str | None, home: Path) -> str:
    """Normalise a URL to an async driver; None means SQLite under GIGI_HOME."""
    if not database_url:
        home.mkdir(parents=True, exist_ok=True)
        return f"sqlite+aiosqlite:///{home / 'gigi.db'}"
    for plain, driver in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://", "postgresql+psycopg://"),
        ("postgres://", "postgresql+psycopg://"),
    ):
        if database_url.startswith(plain):
            return driver + database_url[len(plain) :]
    if database_url.startswith(("sqlite+aiosqlite://", "postgresql+psycopg://")):
        return database_url
    raise StoreError(
        f"unsupported database URL scheme in {redact_url(database_url)!r}",
        hint="use sqlite:///PATH or postgresql+psycopg://USER@HOST/DB",
    )


def libpq_dsn(url: str) -> str:
    """The SQLAlchemy URL as libpq reads it, for connections psycopg opens itself."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def redact_url(url: str) -> str:
    """Hide a password in a URL before it reaches a message or a log."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


class Database:
    """Owns the async engine; ``session()`` yields a transaction that commits on success."""

    def __init__(self, url: str) -> None:
        from sqlalchemy import event
        from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

        self._scratch: Path | None = None
        if _is_memory(url):
            # One in-memory SQLite database can only be shared through one connection, and
            # concurrent tasks on one connection mix their transactions (a reader's reset
            # rolls back a writer's batch). A private file gets SQLite's real locking.
            import tempfile

            self._scratch = Path(tempfile.mkdtemp(prefix="gigi-memory-"))
            url = f"sqlite+aiosqlite:///{self._scratch / 'gigi.db'}"
        self.url = url
        self.dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
        # An error's text never carries a statement's values (message text, sealed blobs)
        # into a log: the writer logs failed queued writes with their exception.
        kwargs: dict[str, Any] = {"hide_parameters": True}
        if self.dialect == "sqlite":
            kwargs["connect_args"] = {"timeout": 30}
        else:
            # LIFO: at low concurrency the same warm connection serves every checkout, and the
            # rest idle out past PING_IDLE_AFTER, so they are the ones pinged.
            kwargs.update(pool_size=5, max_overflow=10, pool_use_lifo=True)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.dialect == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        else:
            ping_when_idle(self.engine.sync_engine)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        from gigi_core.store.writer import Writer

        self.writer = Writer(self, thread=True)

    def sync_engine(self) -> Any:
        """A synchronous engine on the same database, for the writer's own thread (which
        holds one connection: no pool to speak of)."""
        from sqlalchemy import create_engine, event
        from sqlalchemy.engine import make_url

        if self.dialect == "postgresql":
            url = make_url(self.url).set(drivername="postgresql+psycopg")
            engine = create_engine(url, pool_size=1, max_overflow=1, hide_parameters=True)
            ping_when_idle(engine)
            return engine
        url = make_url(self.url).set(drivername="sqlite+pysqlite")
        engine = create_engine(url, connect_args={"timeout": 30}, hide_parameters=True)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        async with self._sessions.begin() as session:
            yield session

    async def check(self) -> None:
        """Connect once so an unreachable database fails early with a clear message."""
        from sqlalchemy import text

        try:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception as exc:
            if self.url.startswith("sqlite"):  # a file: no server to be running
                hint = (
                    "check GIGI_DATABASE_URL (or --database-url, GIGI_HOME) and that its "
                    "folder exists and is writable"
                )
            else:
                hint = "check GIGI_DATABASE_URL (or --database-url) and that the server is running"
            raise StoreError(
                f"cannot reach the database at {redact_url(self.url)}: {_first_line(exc)}",
                hint=hint,
            ) from exc

    async def close(self) -> None:
        await self.writer.close()
        await self.engine.dispose()
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)


PING_IDLE_AFTER = 1.0
"""Seconds a pooled PostgreSQL connection may sit idle before its checkout pings it: a busy
pool reuses its connections within milliseconds, so only a quiet one pays the round trip."""


def ping_when_idle(engine: Any) -> None:
    """Ping a pooled connection on checkout only when it sat idle ``PING_IDLE_AFTER`` seconds.

    ``pool_pre_ping`` paid a round trip (1-5 ms) on every checkout; a busy pool's connections
    are known alive from their last use. A connection the server dropped while it was busy
    fails one statement, and that disconnect invalidates the whole pool (SQLAlchemy's
    default), so the next checkouts reconnect.
    """
    import time

    from sqlalchemy import event, exc

    def checkin(dbapi_connection: Any, record: Any) -> None:
        record.info["gigi_idle_since"] = time.monotonic()

    def checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.get("gigi_idle_since")
        if since is None or time.monotonic() - since < PING_IDLE_AFTER:
            return  # new (just connected) or recently used
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            if not engine.dialect.is_disconnect(error, dbapi_connection, None):
                raise
            alive = False
        if not alive:  # the server went away: the pool drops every older connection, retries
            raise exc.InvalidatePoolError("idle connection failed its ping")

    event.listen(engine, "checkin", checkin)
    event.listen(engine, "checkout", checkout)


def _is_memory(url: str) -> bool:
    return (
        url.rstrip("/").endswith(("sqlite+aiosqlite:", "sqlite+aiosqlite:/")) or ":memory:" in url
    )


def _first_line(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    text = str(getattr(cause, "orig", None) or cause).strip()
    return text.splitlines()[0] if text else type(cause).__name__


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
