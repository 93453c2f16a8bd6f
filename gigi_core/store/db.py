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
            kwargs.update(pool_pre_ping=True, pool_size=5, max_overflow=10)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.dialect == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
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
            return create_engine(
                url, pool_size=1, max_overflow=1, pool_pre_ping=True, hide_parameters=True
            )
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
            raise StoreError(
                f"cannot reach the database at {redact_url(self.url)}: {_first_line(exc)}",
                hint="check GIGI_DATABASE_URL (or --database-url) and that the server is running",
            ) from exc

    async def close(self) -> None:
        await self.writer.close()
        await self.engine.dispose()
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)


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
