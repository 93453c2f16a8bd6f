"""Batched write transactions: queued writes commit together, one thread hop per batch on SQLite.

Through SQLAlchemy's async adapter every SQLite statement costs several hops to aiosqlite's
thread (about 0.6 ms each here), so a run's dozen rows took 2.5 ms; as one synchronous
transaction on a dedicated writer thread (datasette's write-thread pattern) they take about
1 ms. PostgreSQL goes through the async engine instead.
Writes queued while a batch commits are committed together in the next one (group commit).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from gigi_core.store.db import Database

log = logging.getLogger(__name__)
T = TypeVar("T")
WriteFn = Callable[["Connection"], Any]


class Writer:
    """Owned by a ``Database``; ``write`` waits for the commit, ``submit`` does not."""

    def __init__(self, db: Database, *, thread: bool) -> None:
        self.db = db
        self._queue: list[tuple[WriteFn, asyncio.Future[Any]]] = []
        self._committing: list[asyncio.Future[Any]] = []  # the batch in progress
        self._task: asyncio.Task[None] | None = None
        self._thread = thread
        self._executor: ThreadPoolExecutor | None = None
        self._engine: Engine | None = None
        self._conn: Connection | None = None  # held by the writer thread for its lifetime
        self._closed = False

    async def write(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(connection)`` inside a write transaction and return what it returns."""
        # Shielded: a caller that gives up does not cancel the write, and drain() still
        # waits for it to land.
        return await asyncio.shield(self._enqueue(fn))  # type: ignore[no-any-return]

    def submit(
        self, fn: WriteFn, *, on_result: Callable[[Any], None] | None = None
    ) -> asyncio.Future[Any] | None:
        """Queue a write without waiting; a failure is logged, ``on_result`` gets the result.

        The returned future may still be awaited by whoever must know the write landed.
        """
        if self._closed:  # a late timer of a run whose kernel already closed
            log.warning("a write arrived after the database was closed; it was dropped")
            return None
        future = self._enqueue(fn)
        future.add_done_callback(lambda f: _settled(f, on_result))
        return future

    def _enqueue(self, fn: WriteFn) -> asyncio.Future[Any]:
        if self._closed:
            raise RuntimeError("the database is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((fn, future))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run())
        return future

    async def drain(self) -> None:
        """Wait until everything queued so far is committed or failed (read-your-writes).

        Writes queued meanwhile are not waited for, so steady load cannot starve a reader.
        """
        pending = [f for _, f in self._queue] + self._committing
        if pending:
            await asyncio.wait(pending)

    async def close(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        self._closed = True
        if self._executor is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._release)
            self._executor.shutdown(wait=True)
            self._executor = None

    async def _run(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            self._committing = [future for _, future in batch]
            try:
                results = await self._transaction(_all([fn for fn, _ in batch]))
            except Exception as exc:
                if len(batch) == 1:
                    _settle(batch[0][1], exc=exc)
                else:
                    for fn, future in batch:  # one bad write must not sink the others
                        await self._one(fn, future)
            else:
                for (_, future), result in zip(batch, results, strict=True):
                    _settle(future, result)
            finally:
                self._committing = []

    async def _one(self, fn: WriteFn, future: asyncio.Future[Any]) -> None:
        try:
            result = await self._transaction(fn)
        except Exception as exc:
            _settle(future, exc=exc)
        else:
            _settle(future, result)

    async def _transaction(self, fn: WriteFn) -> Any:
        if not self._thread:
            async with self.db.engine.begin() as conn:
                return await conn.run_sync(fn)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gigi-writer")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._in_thread, fn)

    def _in_thread(self, fn: WriteFn) -> Any:
        if self._conn is None:  # no pool checkout and reset per batch: the thread is alone
            self._engine = self.db.sync_engine()
            self._conn = self._engine.connect()
        try:
            with self._conn.begin():
                return fn(self._conn)
        except Exception:
            self._release()  # a broken connection is not reused
            raise

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._engine is not None:
            self._engine.dispose()
        self._conn = self._engine = None


def _settle(
    future: asyncio.Future[Any], result: Any = None, *, exc: Exception | None = None
) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


def _all(fns: list[WriteFn]) -> WriteFn:
    return lambda conn: [fn(conn) for fn in fns]


def _settled(future: asyncio.Future[Any], on_result: Callable[[Any], None] | None) -> None:
    if future.cancelled():
        return
    exc = future.exception()  # marks it retrieved: nobody may be awaiting a submitted write
    if exc is not None:
        log.error("a queued database write failed", exc_info=exc)
    elif on_result is not None:
        on_result(future.result())
