"""The PostgreSQL backend: pgqueuer dispatches, ``gigi_jobs`` stays the record.

pgqueuer owns dispatch: batch dequeue with ``FOR UPDATE SKIP LOCKED``, per-name
concurrency caps enforced in the database across every worker, LISTEN/NOTIFY wake-up and
heartbeat re-pick of jobs whose worker died. Its tables live in their own schema
(``gigi_pgqueuer``) and are installed and upgraded by pgqueuer itself. Each queue entry
carries only the Gigi job id; the handler claims the ``gigi_jobs`` row (fenced) and the
shared worker runs it. Entries are written in the same transaction as the row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from gigi_core.jobs.errors import JobError
from gigi_core.jobs.worker import utcnow
from gigi_core.store.db import libpq_dsn

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from gigi_core.jobs.service import JobService
    from gigi_core.jobs.worker import Worker

log = logging.getLogger("gigi_core.jobs")

SCHEMA = "gigi_pgqueuer"
_ensured: set[str] = set()  # DSNs whose pgqueuer schema this process has checked


def _require_pgqueuer() -> None:
    try:
        import pgqueuer  # noqa: F401
    except ModuleNotFoundError:
        raise JobError(
            "background jobs on PostgreSQL need the pgqueuer package",
            hint="install the postgres extra (pip install pgqueuer, or -e '.[postgres]')",
        ) from None


class PgqueuerBackend:
    name = "postgresql"

    def __init__(self, service: JobService) -> None:
        _require_pgqueuer()
        from pgqueuer.adapters.persistence import qb
        from pgqueuer.domain.settings import DBSettings, Durability

        self.service = service
        self.dsn = libpq_dsn(service.kernel.db.url)
        # Explicit names, so PGQUEUER_* variables meant for another app cannot move ours.
        # "balanced": the queue is WAL-logged (durable); its log and statistics are not.
        self.db_settings = DBSettings(
            prefix="", db_schema=SCHEMA, channel=SCHEMA, durability=Durability.balanced
        )
        self.qbe = qb.QueryBuilderEnvironment(self.db_settings)
        self.qbs = qb.QuerySchedulerBuilder(self.db_settings)
        self._tx_qbq = qb.QueryQueueBuilder(self.db_settings)
        self._lock = asyncio.Lock()

    def queries(self, driver: Any) -> Any:
        from pgqueuer.adapters.persistence import qb
        from pgqueuer.adapters.persistence.queries import Queries

        return Queries(
            driver, qbe=self.qbe, qbq=qb.QueryQueueBuilder(self.db_settings), qbs=self.qbs
        )

    async def prepare(self) -> None:
        """Install or upgrade pgqueuer's schema once per process (under its advisory lock)."""
        if self.dsn in _ensured:
            return
        async with self._lock:
            if self.dsn in _ensured:
                return
            import psycopg

            from gigi_core.jobs.pgqueuer_driver import TransactionDriver

            async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
                queries = self.queries(TransactionDriver(conn))
                async with queries.schema_lock():
                    if not await queries.schema_is_installed():
                        await queries.install()
                        log.info("jobs: installed pgqueuer in schema %s", SCHEMA)
                    elif (await queries.plan_upgrade()).statements:
                        await queries.apply_upgrade()
                        log.info("jobs: upgraded pgqueuer in schema %s", SCHEMA)
            _ensured.add(self.dsn)

    async def _tx_queries(self, conn: AsyncConnection) -> Any:
        from pgqueuer.adapters.persistence.queries import Queries

        from gigi_core.jobs.pgqueuer_driver import TransactionDriver

        raw = await conn.get_raw_connection()
        driver = TransactionDriver(raw.driver_connection)
        return Queries(driver, qbe=self.qbe, qbq=self._tx_qbq, qbs=self.qbs)

    async def dispatch(
        self, conn: AsyncConnection, job_id: str, name: str, run_at: datetime
    ) -> int:
        """A queue entry for the job, in the transaction that writes its row; its id."""
        await self.prepare()
        queries = await self._tx_queries(conn)
        delay = max(timedelta(0), run_at - utcnow())
        [ref] = await queries.enqueue(name, job_id.encode(), 0, delay)
        return int(ref)

    async def withdraw(self, conn: AsyncConnection, engine_ref: int | None) -> None:
        """Drop a cancelled job's entry so it never occupies a worker."""
        if engine_ref is None:
            return
        await self.prepare()
        queries = await self._tx_queries(conn)
        await queries.mark_job_as_cancelled([engine_ref])

    async def prune(self, before: datetime) -> None:
        """pgqueuer keeps a log row per state change; drop those older than ``before``."""
        import psycopg

        table = self.db_settings.qualified.queue_table_log
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
            await conn.execute(f"DELETE FROM {table} WHERE created < %s", (before,))  # type: ignore[arg-type]

    async def close(self) -> None:
        return None

    def dispatcher(self, worker: Worker) -> PgqueuerDispatcher:
        return PgqueuerDispatcher(self, worker)


class PgqueuerDispatcher:
    """pgqueuer queue managers for this worker, one per dequeue batch size.

    pgqueuer frees a capped name's slot when its status log is flushed, which happens
    when a batch worth of jobs finished (or after 0.1 s). A name capped at 1 in a
    batch-of-10 manager therefore waits every time; grouping names by
    ``min(concurrency, GIGI_JOBS_BATCH)`` keeps each manager's batch at its names' cap.
    """

    def __init__(self, backend: PgqueuerBackend, worker: Worker) -> None:
        self.backend = backend
        self.worker = worker
        self._managers: list[Any] = []
        self._stop = asyncio.Event()
        self._inflight = 0

    def wake(self) -> None:
        """NOTIFY wakes every worker; nothing to do here."""

    async def stop(self) -> None:
        self._stop.set()
        for manager in self._managers:
            manager.shutdown.set()

    async def run(self, *, until_idle: bool) -> None:
        """Dispatch until stopped; a lost connection is retried with backoff."""
        if not self.worker.specs:
            return
        delay = self.worker.settings.poll_seconds
        while not self._stop.is_set():
            try:
                await self._session(until_idle=until_idle)
            except Exception as exc:
                if until_idle:
                    raise
                log.error("jobs: the queue connection failed (%s); retrying", type(exc).__name__)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
                delay = min(30.0, delay * 2)
                continue
            if until_idle:
                return

    async def _session(self, *, until_idle: bool) -> None:
        from pgqueuer.core.qm import QueueManager
        from pgqueuer.domain.types import Channel

        from gigi_core.jobs.pgqueuer_driver import WorkerDriver

        settings = self.worker.settings
        await self.backend.prepare()
        driver = await WorkerDriver.connect(self.backend.dsn)
        self._managers = []
        managers: list[asyncio.Task[Any]] = []
        reconciler = asyncio.create_task(self._reconcile_loop(), name="gigi-jobs-reconcile")
        try:
            groups: dict[int, list[Any]] = {}
            for spec in self.worker.specs.values():
                groups.setdefault(min(spec.concurrency, settings.batch), []).append(spec)
            for batch, specs in sorted(groups.items()):
                manager = QueueManager(self.backend.queries(driver), channel=Channel(SCHEMA))
                for spec in specs:
                    manager.entrypoint(
                        spec.name, concurrency_limit=spec.concurrency, accepts_context=False
                    )(self._handle)
                self._managers.append(manager)
                run = manager.run(
                    dequeue_timeout=timedelta(seconds=settings.poll_seconds),
                    batch_size=batch,
                    heartbeat_timeout=timedelta(seconds=settings.stall_seconds),
                    max_concurrent_tasks=max(settings.max_running, 2 * batch),
                    log_aggregation_interval=timedelta(0),
                )
                managers.append(asyncio.create_task(run, name=f"gigi-jobs-pgqueuer-{batch}"))
            if self._stop.is_set():
                await self.stop()
            if until_idle:
                await self._until_idle(managers)
            else:
                stopper = asyncio.create_task(self._stop.wait())
                await asyncio.wait([*managers, stopper], return_when=asyncio.FIRST_COMPLETED)
                stopper.cancel()
        finally:
            for manager in self._managers:
                manager.shutdown.set()
            reconciler.cancel()
            outcomes = await asyncio.gather(*managers, reconciler, return_exceptions=True)
            await driver.close()
        failed = [o for o in outcomes[:-1] if isinstance(o, Exception)]
        if failed:
            raise failed[0]

    async def _until_idle(self, tasks: list[asyncio.Task[Any]]) -> None:
        w = self.worker
        interval = min(0.05, w.settings.poll_seconds)
        while not self._stop.is_set() and not any(t.done() for t in tasks):
            await asyncio.sleep(interval)
            if w.running or w._executing or self._inflight:
                continue
            now = utcnow()
            if not await w.store.has_due(w.specs, now, w.stale_before(now)):
                return

    async def _handle(self, job: Any) -> None:
        """pgqueuer hands us an entry: claim its row and run it. Never raises to pgqueuer
        (it would log the exception's message)."""
        from pgqueuer.domain.errors import RetryRequested

        job_id = bytes(job.payload or b"").decode()
        w = self.worker
        self._inflight += 1
        try:
            if w.stopping:
                await self._redispatch(job_id)
                return
            now = utcnow()
            row = await w.store.claim_one(job_id, w.id, now, w.stale_before(now))
            if row is not None:
                await w.execute(row)
                return
            current = await w.store.get(job_id)
            if current is not None and current.status == "running":
                # Its worker still beats (pgqueuer re-picked on its own, coarser heartbeat):
                # keep the entry and look again later, or the job would lose its entry.
                raise RetryRequested(
                    delay=timedelta(seconds=w.settings.stall_seconds / 2),
                    reason="running on another worker",
                )
        except (asyncio.CancelledError, RetryRequested):
            raise
        except Exception as exc:
            log.warning("jobs: handling job %s failed: %s", job_id, type(exc).__name__)
        finally:
            self._inflight -= 1

    async def _reconcile_loop(self) -> None:
        """Give a queue entry back to jobs that lost theirs.

        A job keeps exactly one live entry through every transition, except when a worker
        that pgqueuer had already given up on (its heartbeat was late) completes its old
        entry after another worker took the job over. If the job is then left queued, or
        its new worker dies too, no entry would ever run it: this finds such rows.
        """
        while True:
            try:
                await self.reconcile()
            except Exception as exc:
                log.warning("jobs: checking for lost queue entries failed: %s", type(exc).__name__)
            await asyncio.sleep(
                max(self.worker.settings.poll_seconds, self.worker.settings.stall_seconds / 2)
            )

    async def reconcile(self) -> int:
        from sqlalchemy import bindparam, text

        w = self.worker
        queue = self.backend.db_settings.qualified.queue_table
        now = utcnow()
        query = text(
            "SELECT g.id, g.name FROM gigi_jobs g"
            " WHERE g.name IN :names"
            " AND ((g.status = 'queued' AND g.run_at <= :now)"
            " OR (g.status = 'running' AND g.heartbeat_at < :stale))"
            f" AND NOT EXISTS (SELECT 1 FROM {queue} q WHERE q.id = g.engine_ref)"
            " ORDER BY g.run_at LIMIT 100 FOR UPDATE OF g SKIP LOCKED"
        ).bindparams(bindparam("names", expanding=True))
        async with w.store.tx() as conn:
            rows = (
                await conn.execute(
                    query, {"names": list(w.specs), "now": now, "stale": w.stale_before(now)}
                )
            ).all()
            for row in rows:
                await w.service.redispatch(conn, row.id, row.name, now)
        if rows:
            log.info("jobs: %d job(s) had lost their queue entry; queued again", len(rows))
        return len(rows)

    async def _redispatch(self, job_id: str) -> None:
        """Dequeued while stopping: leave the job queued, with a fresh entry for later."""
        from sqlalchemy import select

        from gigi_core.jobs.store import T

        async with self.worker.store.tx() as s:
            row = (
                await s.execute(
                    select(T.c.name, T.c.run_at).where(T.c.id == job_id, T.c.status == "queued")
                )
            ).first()
            if row is not None:
                with contextlib.suppress(Exception):
                    await self.worker.service.redispatch(s, job_id, row.name, utcnow())
