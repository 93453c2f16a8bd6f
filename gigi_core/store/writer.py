"""Batched write transactions: queued writes commit together, one thread hop per batch.

Through SQLAlchemy's async adapter every SQLite statement costs several hops to aiosqlite's
thread (about 0.6 ms each here), so a run's dozen rows took 2.5 ms; as one synchronous
transaction on a dedicated writer thread (datasette's write-thread pattern) they take about
1 ms. PostgreSQL is written the same way, with a synchronous psycopg connection on the
writer's thread: on the async engine each statement's round trip waited for the event loop
to come round again, so at 100 concurrent turns a batch advanced one statement per loop
iteration behind them (c=100 fell below c=1).
Writes queued while a batch commits are committed together in the next one (group commit).
A write nobody awaits lingers ``linger_seconds`` (5 ms) for company before its batch starts;
on the thread, plain DML goes straight to the driver (``fast_writes``).

On SQLite the writer's connection never checkpoints the WAL itself: SQLite's automatic
checkpoint runs inside the commit that crosses 1,000 pages and fsyncs twice, so one turn in
a few hundred waited for it (0.1-1.5 s on a busy disk: most of the c=10 p99). A second
thread runs a ``PASSIVE`` checkpoint at most every ``checkpoint_seconds`` after a batch;
it never blocks a writer, and commits go on meanwhile.

``attach`` queues a write that must not cost its caller a commit of its own: it joins
the next write made from the same task (the run journal's, in ``turn`` durability), in
that write's transaction, or goes out alone after ``within`` seconds. An awaited
``write`` from that task first makes sure every write attached there earlier landed, and
raises if one failed: what the caller attached is never dropped without it knowing.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from gigi_core.store.fast_writes import FastConnection, Plans

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from gigi_core.store.db import Database

log = logging.getLogger(__name__)
T = TypeVar("T")
WriteFn = Callable[["Connection"], Any]
Combine = Callable[[list[Any]], WriteFn]


@dataclass(eq=False)
class _Attached:
    fn: WriteFn
    future: asyncio.Future[Any]
    combine: Combine | None = None  # merges writes of its kind into one (fewer statements)
    taken: bool = False  # queued, alone or inside another write
    reported: bool = False  # taken by an awaited write: its caller saw any failure


# The writes attached from the current task. A task created from it copies its context,
# so the list is paired with the task that made it and another task starts its own.
_ATTACHED: contextvars.ContextVar[tuple[asyncio.Task[Any] | None, list[_Attached]] | None] = (
    contextvars.ContextVar("gigi_writer_attached", default=None)
)


def _mine(*, create: bool = False) -> list[_Attached] | None:
    """This task's attached writes (made now when ``create``), or None."""
    task = asyncio.current_task()
    held = _ATTACHED.get()
    if held is not None and held[0] is task:
        return held[1]
    if not create:
        return None
    entries: list[_Attached] = []
    _ATTACHED.set((task, entries))
    return entries


class Writer:
    """Owned by a ``Database``; ``write`` waits for the commit, ``submit`` does not."""

    #: How long a write nobody awaits may wait for company before its batch starts. A run's
    #: first row, queued as its first model call begins, then commits with the turn's last
    #: write when that comes sooner: one commit and one thread hop instead of two. An
    #: awaited write, ``drain`` and ``close`` start the batch at once.
    linger_seconds = 0.005
    #: How often (at most) the checkpoint thread copies the WAL back into a SQLite file.
    checkpoint_seconds = 0.5

    def __init__(self, db: Database, *, thread: bool) -> None:
        self.db = db
        self._queue: list[tuple[WriteFn, asyncio.Future[Any]]] = []
        self._committing: list[asyncio.Future[Any]] = []  # the batch in progress
        self._task: asyncio.Task[None] | None = None
        self._thread = thread
        self._executor: ThreadPoolExecutor | None = None
        self._engine: Engine | None = None
        self._conn: Connection | None = None  # held by the writer thread for its lifetime
        self._plans = Plans()  # statements compiled for the driver (fast_writes)
        self._closed = False
        self._waiting: set[_Attached] = set()  # attached, not yet queued
        self._linger: asyncio.TimerHandle | None = None  # a batch due to start
        self._checkpointer: ThreadPoolExecutor | None = None  # SQLite: its own thread
        self._checkpoint_engine: Engine | None = None
        self._checkpoint_conn: Connection | None = None
        self._checkpointing: asyncio.Future[Any] | None = None
        self._checkpointed_at = -math.inf  # monotonic (0 is "just now" on a new boot)
        #: (busy, frames in the WAL, frames copied back) of the last checkpoint, or None.
        self.last_checkpoint: tuple[int, int, int] | None = None

    async def write(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(connection)`` inside a write transaction and return what it returns.

        Raises, without writing, if a write attached from this task earlier failed.
        """
        await self._attached_landed()
        # Shielded: a caller that gives up does not cancel the write, and drain() still
        # waits for it to land.
        return await asyncio.shield(self._enqueue(fn, awaited=True))  # type: ignore[no-any-return]

    def attach(
        self, fn: WriteFn, *, within: float, combine: Combine | None = None
    ) -> asyncio.Future[Any]:
        """Queue ``fn`` with the next write from this task, or alone after ``within`` s.

        Writes attached with the same ``combine`` that go out together are handed to it
        as a list and written as the one write it returns. The future settles when it
        landed (or failed); a failure is also logged.
        """
        if self._closed:
            raise RuntimeError("the database is closed")
        loop = asyncio.get_running_loop()
        entries = _mine(create=True)
        assert entries is not None
        entries[:] = [e for e in entries if not (e.taken and _landed(e.future))]
        entry = _Attached(fn, loop.create_future(), combine)
        entry.future.add_done_callback(lambda f: _settled(f, None))
        entries.append(entry)
        self._waiting.add(entry)
        loop.call_later(within, self._alone, [entry])
        return entry.future

    async def _attached_landed(self) -> None:
        entries = _mine()
        if not entries:
            return
        while queued := [e.future for e in entries if e.taken and not e.future.done()]:
            await asyncio.wait(queued)  # queued before this write: they settle first anyway
        failed = [
            e.future.exception()
            for e in entries
            if e.taken and not e.reported and not e.future.cancelled() and e.future.exception()
        ]
        entries[:] = [e for e in entries if not e.taken]
        if failed:
            raise RuntimeError(
                f"{len(failed)} write(s) queued earlier from this task failed: "
                f"{type(failed[0]).__name__}"
            ) from failed[0]

    def _take(self, entries: list[_Attached]) -> list[_Attached]:
        taken = [e for e in entries if not e.taken]
        for entry in taken:
            entry.taken = True
            self._waiting.discard(entry)
        return taken

    def _alone(self, entries: list[_Attached]) -> None:
        """Nobody wrote from the attaching task in time: the writes go out on their own."""
        taken = self._take(entries)
        if not taken:
            return
        if self._closed:  # cannot happen after close() (it flushes); kept for safety
            for entry in taken:
                _settle(entry.future, exc=RuntimeError("the database is closed"))
            return
        self._enqueue(_run_all(_combined(taken)), attached=taken, take=False, now=True)

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

    def _enqueue(
        self,
        fn: WriteFn,
        *,
        attached: list[_Attached] | None = None,
        take: bool = True,
        awaited: bool = False,
        now: bool = False,
    ) -> asyncio.Future[Any]:
        if self._closed:
            raise RuntimeError("the database is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        entries = _mine() if take else None
        if entries:  # writes attached from this task ride along
            attached = self._take(entries)
            if attached:
                fn = _with_attached(_combined(attached), fn)
                for entry in attached:
                    entry.reported = awaited
        if attached:
            future.add_done_callback(lambda f: _pass_on(f, attached))
        self._queue.append((fn, future))
        self._start(now=now or awaited)
        return future

    def _start(self, *, now: bool) -> None:
        """Start committing what is queued, at once or after ``linger_seconds``."""
        if self._task is not None and not self._task.done():
            return  # the running batch loop takes what is queued next
        if not now and self.linger_seconds > 0:
            if self._linger is None:
                loop = asyncio.get_running_loop()
                self._linger = loop.call_later(self.linger_seconds, self._start_now)
            return
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        if self._queue:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def _start_now(self) -> None:
        self._linger = None
        self._start(now=True)

    async def drain(self) -> None:
        """Wait until everything queued so far is committed or failed (read-your-writes).

        Attached writes still waiting for a partner go out now. Writes queued meanwhile
        are not waited for, so steady load cannot starve a reader.
        """
        if self._waiting:
            self._alone(list(self._waiting))
        self._start(now=True)
        pending = [f for _, f in self._queue] + self._committing
        if pending:
            await asyncio.wait(pending)

    async def close(self) -> None:
        if self._waiting:
            self._alone(list(self._waiting))
        self._start(now=True)
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        self._closed = True
        if self._checkpointing is not None:
            await asyncio.wait([self._checkpointing])
        if self._checkpointer is not None:
            self._checkpointer.submit(self._release_checkpointer).result()
            self._checkpointer.shutdown(wait=True)
            self._checkpointer = None
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
            self._checkpoint_soon()

    def _checkpoint_soon(self) -> None:
        """SQLite: start a WAL checkpoint on its own thread, unless one ran lately."""
        if not self._thread or self._closed or self.db.dialect != "sqlite":
            return
        if self._checkpointing is not None and not self._checkpointing.done():
            return
        now = time.monotonic()
        if now - self._checkpointed_at < self.checkpoint_seconds:
            return
        self._checkpointed_at = now
        if self._checkpointer is None:
            self._checkpointer = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="gigi-checkpoint"
            )
        loop = asyncio.get_running_loop()
        self._checkpointing = loop.run_in_executor(self._checkpointer, self._checkpoint)
        self._checkpointing.add_done_callback(_checkpointed)

    def _checkpoint(self) -> None:
        """On the checkpoint thread: copy committed WAL frames into the database file."""
        if self._checkpoint_conn is None:
            self._checkpoint_engine = self.db.sync_engine()
            self._checkpoint_conn = self._checkpoint_engine.connect()
        raw = self._checkpoint_conn.connection.driver_connection
        try:
            row = raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except Exception:
            self._release_checkpointer()
            raise
        self.last_checkpoint = (int(row[0]), int(row[1]), int(row[2]))

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
            if self.db.dialect == "sqlite":  # the checkpoint thread copies the WAL back
                self._conn.connection.driver_connection.execute("PRAGMA wal_autocheckpoint=0")
        try:
            with self._conn.begin():
                return fn(FastConnection(self._conn, self._plans))
        except Exception:
            self._release()  # a broken connection is not reused
            raise

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._engine is not None:
            self._engine.dispose()
        self._conn = self._engine = None

    def _release_checkpointer(self) -> None:
        if self._checkpoint_conn is not None:
            self._checkpoint_conn.close()
        if self._checkpoint_engine is not None:
            self._checkpoint_engine.dispose()
        self._checkpoint_conn = self._checkpoint_engine = None


def _checkpointed(future: asyncio.Future[Any]) -> None:
    """A failed checkpoint loses nothing (the frames stay in the WAL); it is logged."""
    if not future.cancelled() and future.exception() is not None:
        log.warning("a SQLite WAL checkpoint failed", exc_info=future.exception())


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


def _combined(entries: list[_Attached]) -> list[WriteFn]:
    """The entries' writes, those of one kind merged by their ``combine``."""
    plain: list[WriteFn] = []
    kinds: dict[Combine, list[WriteFn]] = {}
    for entry in entries:
        if entry.combine is None:
            plain.append(entry.fn)
        else:
            kinds.setdefault(entry.combine, []).append(entry.fn)
    return plain + [combine(fns) if len(fns) > 1 else fns[0] for combine, fns in kinds.items()]


def _run_all(fns: list[WriteFn]) -> WriteFn:
    def write(conn: Connection) -> None:
        for fn in fns:
            fn(conn)

    return write


def _with_attached(fns: list[WriteFn], fn: WriteFn) -> WriteFn:
    """The attached writes first, then ``fn``, in one transaction; ``fn``'s result."""

    def write(conn: Connection) -> Any:
        for attached in fns:
            attached(conn)
        return fn(conn)

    return write


def _pass_on(future: asyncio.Future[Any], attached: list[_Attached]) -> None:
    """The attached writes share the fate of the transaction that carried them."""
    exc = future.exception() if not future.cancelled() else RuntimeError("write cancelled")
    for entry in attached:
        if isinstance(exc, Exception):
            _settle(entry.future, exc=exc)
        else:
            _settle(entry.future, None)


def _landed(future: asyncio.Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _settled(future: asyncio.Future[Any], on_result: Callable[[Any], None] | None) -> None:
    if future.cancelled():
        return
    exc = future.exception()  # marks it retrieved: nobody may be awaiting a submitted write
    if exc is not None:
        log.error("a queued database write failed", exc_info=exc)
    elif on_result is not None:
        on_result(future.result())
