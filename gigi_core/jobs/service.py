"""``kernel.jobs``: defer, inspect, cancel and retry jobs, and run the worker.

One port, two backends: SQLite (the embedded default) polls its own table from an
in-process worker; PostgreSQL hands dispatch to pgqueuer so several ``gigi worker``
processes share the queue. ``gigi_jobs`` is the record on both, so listings, progress and
dead-letter rows look the same everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from gigi_core.jobs.errors import JobError, JobNotFound
from gigi_core.jobs.models import STATUSES, JobInfo
from gigi_core.jobs.settings import JobSettings
from gigi_core.jobs.store import JobStore
from gigi_core.jobs.worker import Worker, utcnow

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from gigi_core.jobs.spec import JobSpec
    from gigi_core.kernel import Kernel

log = logging.getLogger("gigi_core.jobs")

MAX_PAYLOAD_BYTES = 64 * 1024
FINAL = ("done", "failed", "cancelled")


class JobService:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.settings = JobSettings.from_env()
        self.store = JobStore(kernel.db)
        self.backend = self._make_backend()
        self._worker: Worker | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def _make_backend(self) -> Any:
        if self.kernel.db.dialect == "postgresql":
            from gigi_core.jobs.pgqueuer_backend import PgqueuerBackend

            return PgqueuerBackend(self)
        from gigi_core.jobs.local import LocalBackend

        return LocalBackend(self)

    def spec(self, name: str) -> JobSpec:
        spec = self.kernel.registry.jobs.get(name)
        if spec is None:
            known = ", ".join(sorted(self.kernel.registry.jobs)) or "none"
            raise JobError(
                f"no job is registered as {name!r} (registered: {known})",
                hint="is the plugin that registers it installed and loaded? see gigi plugins list",
            )
        return spec

    # -- deferring ----------------------------------------------------------------------

    async def defer(
        self,
        name: str,
        payload: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        run_at: datetime | None = None,
    ) -> str:
        """Queue ``name(ctx, **payload)``; with ``key``, at most one queued job per key."""
        self.spec(name)
        payload = _check_payload(name, payload)
        key = _check_key(name, key)
        when = _check_run_at(name, run_at)
        for _ in range(5):
            try:
                async with self.store.tx() as s:
                    if key is not None and (existing := await self.store.queued_key(s, name, key)):
                        return existing
                    job_id = await self.insert_job(
                        s, name, payload, key=key, run_at=when or utcnow(), lock_key=True
                    )
            except IntegrityError:
                if key is None:
                    raise
                continue  # another deferral with this key won; the next round returns its id
            log.debug("job %s %s: deferred", name, job_id)
            self._wake()
            return job_id
        raise JobError(f"job {name}: could not defer with key {key!r} (contended); try again")

    async def insert_job(
        self,
        conn: AsyncConnection,
        name: str,
        payload: dict[str, Any],
        *,
        key: str | None,
        run_at: datetime,
        lock_key: bool,
    ) -> str:
        """Write a queued row and hand it to the backend, inside the caller's transaction."""
        spec = self.spec(name)
        job_id = uuid.uuid4().hex
        ref = await self.backend.dispatch(conn, job_id, name, run_at)
        await self.store.insert(
            conn,
            {
                "engine_ref": ref,
                "id": job_id,
                "name": name,
                "status": "queued",
                "payload": payload,
                "key": key,
                "key_lock": key if lock_key else None,
                "attempts": 0,
                "retries": spec.retries,
                "run_at": run_at,
                "created_at": utcnow(),
                "cancel_requested": False,
            },
        )
        return job_id

    async def redispatch(
        self, conn: AsyncConnection, job_id: str, name: str, run_at: datetime
    ) -> None:
        """An existing row queued again: a new queue entry for it (PostgreSQL), same transaction."""
        ref = await self.backend.dispatch(conn, job_id, name, run_at)
        if ref is not None:
            await self.store.set_engine_ref(conn, job_id, ref)

    # -- inspecting and changing --------------------------------------------------------

    async def get(self, job_id: str) -> JobInfo:
        row = await self.store.get(job_id)
        if row is None:
            raise JobNotFound(f"no job has the id {job_id!r}", hint="see gigi jobs list")
        return JobInfo.from_row(row)

    async def resolve(self, text: str) -> str:
        """A full id, or a prefix of exactly one (as typed at the CLI)."""
        ids = await self.store.ids_starting(text.strip()) if text.strip() else []
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise JobNotFound(f"no job has the id {text!r}", hint="see gigi jobs list")
        raise JobError(f"more than one job id starts with {text!r}; type more of it")

    async def list(
        self,
        status: str | None = None,
        limit: int = 100,
        *,
        name: str | None = None,
        guild_id: str | None = None,
    ) -> list[JobInfo]:
        """Newest first; ``guild_id`` keeps the jobs whose payload names that guild."""
        if status is not None and status not in STATUSES:
            raise JobError(f"unknown job status {status!r} (one of: {', '.join(STATUSES)})")
        rows = await self.store.list(status, name, max(1, min(int(limit), 10_000)), guild_id)
        return [JobInfo.from_row(r) for r in rows]

    async def cancel(self, job_id: str, *, by: str | None = None) -> bool:
        """Cancel a queued job now, or ask a running one to stop (``ctx.cancelled``);
        ``by`` (a member's id, from an admin surface) audits who did it."""
        done = await self._cancel(job_id)
        if by is not None:
            await self._audit(job_id, "job.cancel", "ok" if done else "noop", by)
        return done

    async def _cancel(self, job_id: str) -> bool:
        async with self.store.tx() as s:
            row = await self.store.cancel_queued(s, job_id, utcnow())
            if row is not None:
                await self.backend.withdraw(s, row.engine_ref)
        if row is not None:
            log.info("job %s: cancelled while queued", job_id)
            return True
        if await self.store.request_cancel(job_id):
            running = self._worker.running.get(job_id) if self._worker else None
            if running is not None:
                running.stop("cancel", self.settings.grace_seconds)
            log.info("job %s: cancel requested while running", job_id)
            return True
        await self.get(job_id)  # unknown ids are an error; finished jobs just say False
        return False

    async def cancel_key(self, name: str, key: str) -> bool:
        """Cancel the queued job(s) deferred with ``key`` (e.g. a scheduled purge on rejoin)."""
        cancelled = False
        async with self.store.tx() as s:
            for job_id in await self.store.queued_ids_with_key(s, name, key):
                row = await self.store.cancel_queued(s, job_id, utcnow())
                if row is not None:
                    await self.backend.withdraw(s, row.engine_ref)
                    cancelled = True
        return cancelled

    async def _audit(self, job_id: str, kind: str, status: str, by: str) -> None:
        """Who cancelled or retried a job, where: metadata only (the job's name, no payload)."""
        from gigi_core.store.audit import AuditRecord

        info = await self.get(job_id)
        record = AuditRecord(
            kind=kind, status=status, actor_id=by, guild_id=info.guild_id, action=info.name,
            capability="gigi.jobs.manage",
        )  # fmt: skip
        await self.kernel.audit.record(record)

    async def retry(self, job_id: str, *, by: str | None = None) -> None:
        """Queue a failed or cancelled job again, with its full number of attempts;
        ``by`` (a member's id, from an admin surface) audits who did it."""
        now = utcnow()
        async with self.store.tx() as s:
            row = await self.store.requeue_finished(s, job_id, now)
            if row is not None:
                await self.redispatch(s, job_id, row.name, now)
        if row is None:
            info = await self.get(job_id)
            raise JobError(
                f"job {job_id} is {info.status}: only failed or cancelled jobs can be retried"
            )
        log.info("job %s: queued again by retry", job_id)
        self._wake()
        if by is not None:
            await self._audit(job_id, "job.retry", "ok", by)

    async def wait(
        self,
        job_id: str,
        *,
        timeout_s: float | None = None,
        on_update: Callable[[JobInfo], Any] | None = None,
    ) -> JobInfo:
        """Poll until the job is done, failed or cancelled (a worker must be running)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        interval = min(0.5, self.settings.poll_seconds)
        while True:
            info = await self.get(job_id)
            if on_update is not None:
                on_update(info)
            if info.status in FINAL:
                return info
            if deadline is not None and loop.time() >= deadline:
                raise JobError(f"job {job_id} is still {info.status} after {timeout_s:g} s")
            await asyncio.sleep(interval)

    # -- the worker ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the in-process worker (``gigi run``, ``gigi worker``); idempotent."""
        if self._closed:
            raise JobError("the job service is closed")
        if self._task is not None:
            return
        if not self.kernel.registry.jobs:
            log.debug("jobs: no job registered; the worker does not start")
            return
        await self.backend.prepare()
        self._worker = Worker(self)
        self._task = asyncio.create_task(self._worker.run(until_idle=False), name="gigi-jobs")
        self._task.add_done_callback(_report_crash)
        log.info("jobs: worker %s started (%s)", self._worker.id, self.backend.name)

    async def run_until_idle(self) -> None:
        """Run every job that is due, and those they make due, then return."""
        if self._closed:
            raise JobError("the job service is closed")
        if not self.kernel.registry.jobs:
            return
        if self._worker is not None and self._task is not None and not self._task.done():
            await self._wait_idle(self._worker)
            return
        await Worker(self).run(until_idle=True)

    async def _wait_idle(self, worker: Worker) -> None:
        interval = min(0.05, self.settings.poll_seconds)
        while True:
            if not worker.running and not worker._executing:
                now = utcnow()
                if not await self.store.has_due(
                    self.kernel.registry.jobs, now, worker.stale_before(now)
                ):
                    return
            worker.changed()
            await asyncio.sleep(interval)

    @property
    def worker_id(self) -> str | None:
        return self._worker.id if self._worker else None

    async def close(self) -> None:
        """Stop the worker gracefully: running jobs see ``ctx.cancelled``, then are cancelled."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            await self._worker.close()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self.backend.close()
        await self.store.close()

    def _wake(self) -> None:
        if self._worker is not None:
            self._worker.changed()


def _report_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("jobs: the worker stopped: %s", type(task.exception()).__name__)


def _check_payload(name: str, payload: Any) -> dict[str, Any]:
    """A JSON object with string keys, stored exactly as the job will receive it."""
    if payload is None:
        return {}
    if not isinstance(payload, dict) or not all(isinstance(k, str) for k in payload):
        raise JobError(
            f"job {name}: the payload must be a JSON object with string keys "
            f"(got {type(payload).__name__})",
            hint="pass ids and numbers as keyword arguments of the job",
        )
    try:
        text = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise JobError(
            f"job {name}: the payload is not JSON ({exc})",
            hint="pass ids, numbers and strings; load anything else inside the job",
        ) from None
    if len(text.encode()) > MAX_PAYLOAD_BYTES:
        raise JobError(
            f"job {name}: the payload is over {MAX_PAYLOAD_BYTES // 1024} KiB",
            hint="a payload carries ids, not data: store the data and pass its id",
        )
    return json.loads(text)


def _check_key(name: str, key: Any) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not 0 < len(key) <= 200:
        raise JobError(f"job {name}: key must be a string of 1 to 200 characters")
    return key


def _check_run_at(name: str, run_at: Any) -> datetime | None:
    if run_at is None:
        return None
    if not isinstance(run_at, datetime) or run_at.tzinfo is None:
        raise JobError(
            f"job {name}: run_at must be a timezone-aware datetime",
            hint="e.g. datetime.now(UTC) + timedelta(hours=1)",
        )
    return run_at.astimezone(UTC)
