"""The batching writer: the only code that writes the ledger, mentions and search text.

The event handler appends an ``Op`` to an in-memory queue and returns (no database await).
One task per kernel takes everything queued (up to ``BATCH``), redacts, normalises and seals
the texts, and commits consecutive operations of one kind together: a burst of messages is
a few multi-row statements in one transaction (group commit). Operations keep their order,
so a delete queued after a create always lands after it.

When the database fails the batch stays queued and is retried with backoff (the lag shows
in ``/memory status``); a batch that fails for a reason retrying cannot fix is split and
the one bad operation dropped. Message creates are dropped (and counted) when the queue is
full; edits, deletes and purges never are.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gigi_memory.ingest import ledger
from gigi_memory.ingest.contents import ContentMaker
from gigi_memory.ingest.operations import Op, WriterStats, queue_limit
from gigi_memory.ingest.redactor import Redactor
from gigi_memory.ingest.write_errors import Retry, transient
from gigi_memory.policy import now_ms

if TYPE_CHECKING:
    from gigi_memory.service import MemoryService

log = logging.getLogger("gigi_memory")

BATCH = 2000
CHUNK = 2000  # rows per statement or transaction in purges and rewrites
LINGER_SECONDS = 0.005  # a write waits at most this long for others to share its commit
COPY_HALF = 500  # PostgreSQL: a run of creates twice this long is copied as two halves at once
PREPARE_SLICE = 100  # messages redacted and sealed between yields to the loop (~5 ms)
YIELD_SECONDS = 0.002  # the writer's CPU between two turns it gives the loop
HEAVY = frozenset(
    {"purge_channel", "purge_guild", "purge_user", "restrict", "retention", "drop_vectors"}
)
RETRY_FIRST_SECONDS = 0.5  # the wait after a failed batch, doubled each time it fails again
RETRY_MAX_SECONDS = 30.0  # at most this: the writer retries without limit, keeping the queue


@dataclass
class Writer(ContentMaker):
    service: MemoryService
    queue: deque[Op] = field(default_factory=deque)
    stats: WriterStats = field(default_factory=WriterStats)
    redactor: Redactor = field(default_factory=Redactor)  # off-loop patterns, per-guild counts
    seq: int = 0
    done_seq: int = 0
    _wake: asyncio.Event | None = None
    _task: asyncio.Task[None] | None = None
    _waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)
    _inflight: deque[Op] = field(default_factory=deque)  # taken from the queue, not yet settled
    _closed: bool = False
    _limit: int = field(default_factory=queue_limit)
    _conn: Any = None  # PostgreSQL: the connection held while work is queued (``_connection``)
    _conn2: Any = None  # PostgreSQL: the second half's, for long runs of creates (``_copy``)

    # -- queueing (no awaits: called from the event handler) -------------------------------------

    def enqueue(self, op: Op, *, wait: bool = False) -> asyncio.Future[Any] | None:
        if self._closed:
            if wait:
                raise RuntimeError("the memory writer is closed")
            return None
        if op.kind == "create" and len(self.queue) >= self._limit:
            self.stats.dropped += 1
            if self.stats.dropped in (1, 100, 10_000) or self.stats.dropped % 100_000 == 0:
                log.warning("memory: writer queue full, %d message(s) dropped", self.stats.dropped)
            return None
        self.seq += 1
        op.seq = self.seq
        op.queued_at = time.monotonic()
        if wait:
            op.future = asyncio.get_running_loop().create_future()
        self.queue.append(op)
        self.wake()
        return op.future

    async def submit(self, op: Op) -> Any:
        """Queue an operation and wait until it is committed; returns its result (counts)."""
        future = self.enqueue(op, wait=True)
        assert future is not None
        return await future

    def drop_channel(self, guild_id: str, channel_id: str) -> int:
        """Forget queued creates and edits of a channel (and its threads) that was secured."""
        kept: deque[Op] = deque()
        dropped = 0
        for op in self.queue:
            if op.kind not in ("create", "edit") or op.guild_id != guild_id:
                kept.append(op)
                continue
            d = op.materialize()
            if channel_id in (d["channel_id"], d.get("parent_id")):
                dropped += 1
                self._settle(op, None)
                continue
            kept.append(op)
        self.queue = kept
        self._advance()
        return dropped

    @property
    def lag_seconds(self) -> float:
        """How long the oldest operation not yet committed has waited: the batch being
        written counts (during an outage it is the one stuck retrying its connection)."""
        oldest = self._inflight or self.queue
        if not oldest:
            return 0.0
        return round(time.monotonic() - oldest[0].queued_at, 3)

    async def flush(self, seconds: float | None = None) -> bool:
        """Wait until everything queued before this call is committed (or dropped)."""
        target = self.seq
        if self.done_seq >= target:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        try:
            async with asyncio.timeout(seconds):
                await asyncio.shield(future)
        except TimeoutError:
            return False
        return True

    async def close(self, seconds: float = 10.0) -> None:
        """Commit what is queued (for at most ``seconds``), then stop."""
        with contextlib.suppress(Exception):
            await self.flush(seconds)
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        await self._release()
        self.redactor.close()
        for op in self.queue:
            if op.future is not None and not op.future.done():
                op.future.set_exception(RuntimeError("the memory writer closed"))
        if self.queue:
            log.warning("memory: %d queued operation(s) not written at shutdown", len(self.queue))

    # -- the task --------------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = RETRY_FIRST_SECONDS
        while not self._closed:
            if not self.queue:
                await self._release()  # idle: the connection goes back to the pool
                if self.queue:  # queued while it was released: its wake-up must not be lost
                    continue
                assert self._wake is not None
                self._wake.clear()
                due = self.service.store.compact_due()
                if due is None:
                    await self._wake.wait()
                    continue
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(due):
                        await self._wake.wait()
                if not self.queue:
                    await self._compact()
                continue
            linger = self.queue[0].queued_at + LINGER_SECONDS - time.monotonic()
            if len(self.queue) < BATCH and linger > 0:
                await asyncio.sleep(linger)  # let a burst gather: one commit, not one each
                continue
            batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
            self._inflight = deque(batch)
            try:
                await self._apply_overlapped(batch)
            except asyncio.CancelledError:
                self.queue.extendleft(reversed(self._inflight))
                self._inflight.clear()
                raise
            except Exception as exc:  # Retry, or anything unforeseen: keep the work, wait
                error = exc.error if isinstance(exc, Retry) else type(exc).__name__
                self.stats.retries += 1
                self.stats.last_error = error
                log.warning("memory: write failed (%s); retrying in %.1fs", error, backoff)
                self.queue.extendleft(reversed(self._inflight))
                self._inflight.clear()
                await self._release(broken=True)  # the retry starts on a fresh connection
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_SECONDS)
                continue
            backoff = RETRY_FIRST_SECONDS

    async def _connection(self, second: bool = False) -> Any:
        """PostgreSQL: one connection for every batch while work is queued, so a batch pays
        no pool checkout and no pre-ping (a round trip each, waiting for the loop's turn:
        1-5 ms a batch in bench/memory_ingest.py). Released when the queue runs dry or after
        an error; the next batch checks out another, which the pool pings if it sat idle.
        ``second``: the other half of a long run of creates (``_copy``)."""
        conn = self._conn2 if second else self._conn
        if conn is None or conn.closed or conn.invalidated:
            conn = await self.service.engine.connect()
            if second:
                self._conn2 = conn
            else:
                self._conn = conn
        return conn

    async def _release(self, *, broken: bool = False) -> None:
        held, self._conn, self._conn2 = (self._conn, self._conn2), None, None
        for conn in held:
            if conn is None:
                continue
            with contextlib.suppress(Exception):
                if broken and not conn.invalidated:
                    await conn.invalidate()  # never back to the pool: it may be the lost one
                await conn.close()

    @contextlib.asynccontextmanager
    async def _begin(self, second: bool = False) -> Any:
        """A transaction on the writer's held connection (PostgreSQL) or a pooled one."""
        if self.service.dialect != "postgresql":
            async with self.service.engine.begin() as conn:
                yield conn
            return
        conn = await self._connection(second)
        async with conn.begin():
            yield conn

    def _begin_second(self) -> Any:
        return self._begin(second=True)

    def wake(self) -> None:
        """Work was queued, or rows were written elsewhere (the embedding job) that the
        idle writer's compaction should see: the task runs (started if it is not)."""
        if self._closed:
            return
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._task is None or self._task.done():
            # Only here: the loop lookup is a getpid() system call (CPython 3.11), 5 % of
            # the loop's time when it was made per message (py-spy --native, bench P3).
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="gigi-memory-writer"
            )

    async def _compact(self) -> None:
        try:
            await self.service.store.compact()
        except Exception as exc:
            self.stats.last_error = type(exc).__name__
            log.warning("memory: full-text compaction failed: %s", type(exc).__name__)

    async def compact_now(self) -> None:
        """Commit what is queued, then on SQLite rewrite the FTS5 index if text was removed
        (privacy: no removed word left). PostgreSQL's merge only speeds reads: it waits."""
        await self.flush()
        if self.service.dialect == "sqlite":
            await self._compact()

    async def _apply_overlapped(self, batch: list[Op]) -> None:
        """``_apply(batch)``, while the creates queued behind it are redacted and sealed.

        The database works on this batch while Python prepares the next one (it would
        otherwise wait for each commit, then prepare): the two overlap instead of adding
        up. The prepared ops stay in the queue, in order, as they were (a secured channel
        still drops them); only their content is made early.
        """
        task = asyncio.ensure_future(self._apply(batch))
        try:
            ahead = [
                op
                for op in itertools.islice(self.queue, BATCH)
                if op.kind == "create" and op.ahead is None
            ]
            for start in range(0, len(ahead), PREPARE_SLICE):
                await asyncio.sleep(0)  # the batch's statements go out first
                if task.done():
                    break
                await self._prepare_ahead(ahead[start : start + PREPARE_SLICE])
        except BaseException:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise
        await task

    async def _apply(self, batch: list[Op]) -> None:
        """Run after run of one kind, each in its own transaction (heavy ops chunked)."""
        i = 0
        while i < len(batch):
            j = i + 1
            if batch[i].kind not in HEAVY:
                while j < len(batch) and batch[j].kind == batch[i].kind:
                    j += 1
            run = batch[i:j]
            try:
                results = await self._run_ops(run)
                self.service.store.note_written()
                if run[0].kind != "create":  # segments may have gone: the NumPy cache re-checks
                    self.service.vectors.generation += 1
            except Exception as exc:
                if transient(exc):
                    raise Retry(type(exc).__name__) from exc
                results = await self._one_by_one(run, exc)
            for op, result in zip(run, results, strict=True):
                self._settle(op, result)
            self.stats.last_commit_ms = now_ms()
            self._advance()
            i = j

    async def _one_by_one(self, run: list[Op], first: Exception) -> list[Any]:
        """A run failed for a reason retrying cannot fix: find and drop the bad operation."""
        if len(run) == 1:
            self._fail(run[0], first)
            return [None]
        results = []
        for op in run:
            try:
                results.extend(await self._run_ops([op]))
            except Exception as exc:
                if transient(exc):
                    raise Retry(type(exc).__name__) from exc
                self._fail(op, exc)
                results.append(None)
        return results

    def _fail(self, op: Op, exc: Exception) -> None:
        self.stats.failed += 1
        self.stats.last_error = type(exc).__name__
        log.error("memory: dropped a %s operation after %s", op.kind, type(exc).__name__)
        if op.future is not None and not op.future.done():
            op.future.set_exception(exc)
            op.future = None

    def _settle(self, op: Op, result: Any) -> None:
        if op.future is not None and not op.future.done():
            op.future.set_result(result)
        if self._inflight and self._inflight[0] is op:
            self._inflight.popleft()

    def _advance(self) -> None:
        """Everything before the first unsettled operation is done; wake who waits for it."""
        firsts = [q[0].seq for q in (self._inflight, self.queue) if q]
        self.done_seq = min(firsts) - 1 if firsts else self.seq
        still = []
        for target, future in self._waiters:
            if self.done_seq >= target:
                if not future.done():
                    future.set_result(None)
            else:
                still.append((target, future))
        self._waiters = still

    # -- the statements ----------------------------------------------------------------------------

    async def _run_ops(self, run: list[Op]) -> list[Any]:
        kind = run[0].kind
        svc = self.service
        if kind in HEAVY:
            return [await getattr(svc.store, kind)(run[0].guild_id, **run[0].data)]
        if kind in ("create", "edit"):
            # On the loop, a slice at a time: a worker thread would hold the GIL against the
            # surface's event handlers and the database I/O of this very task (bench P3/P4).
            # A turn is ceded only after real work (~YIELD_SECONDS): content made ahead costs
            # nothing, and each turn given away let the publisher run a slice while the
            # database sat idle between two batches (bench/memory_ingest.py batches).
            prepared = []
            since = time.perf_counter()
            for start in range(0, len(run), PREPARE_SLICE):
                if time.perf_counter() - since > YIELD_SECONDS:
                    await asyncio.sleep(0)
                    since = time.perf_counter()
                prepared.extend(await self._prepare(run[start : start + PREPARE_SLICE]))
            if kind == "create" and svc.dialect == "postgresql":
                prepared = await self._copy(prepared)
                if not prepared:
                    svc.vectors.kick({op.guild_id for op in run if op.guild_id})
                    return [None] * len(run)
        async with self._begin() as conn:
            if kind == "create":
                self.stats.written += await ledger.creates(svc, conn, prepared)
            elif kind == "edit":
                self.stats.edited += await ledger.edits(svc, conn, prepared)
            elif kind == "delete":
                self.stats.deleted += await ledger.deletes(svc, conn, run)
            else:
                raise ValueError(f"unknown memory operation {kind!r}")
            if kind != "create" and svc.dialect == "sqlite":
                await svc.store.merge_fts(conn)
        if kind in ("create", "edit"):  # committed: the embedding job may read them now
            svc.vectors.kick({op.guild_id for op in run if op.guild_id})
        return [None] * len(run)

    async def _copy(self, prepared: list[Any]) -> list[Any]:
        """PostgreSQL: ``COPY`` a run of creates; what ``COPY`` could not take (a redelivered
        id, copies from history) is returned for ``ledger.creates``, which deduplicates.

        A long run goes as two halves on two connections at once. One connection left
        each side waiting for the other: the server for rows and commands, the loop for
        the server's replies (bench P3). Creates are independent, so the halves need no
        order between them. If one half fails, the whole run is retried, and the half
        already committed comes back as redeliveries.
        """
        if len(prepared) < 2 * COPY_HALF:
            parts = [prepared]
        else:
            half = len(prepared) // 2
            parts = [prepared[:half], prepared[half:]]
        begins = (self._begin, self._begin_second)
        results = await asyncio.gather(
            *(ledger.copy_creates(begin, part) for begin, part in zip(begins, parts, strict=False)),
            return_exceptions=True,
        )
        left: list[Any] = []
        for part, written in zip(parts, results, strict=True):
            if isinstance(written, BaseException):
                raise written
            if written is None:
                left.extend(part)
            else:
                self.stats.written += written
        return left
