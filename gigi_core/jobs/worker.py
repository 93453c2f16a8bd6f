"""Runs claimed jobs to an outcome: timeout, retries with backoff, cancellation, heartbeats.

The same worker serves both backends; only how jobs are claimed differs (``local`` polls
SQLite, ``pgqueuer_backend`` lets pgqueuer dispatch). Logs carry ids, names, attempts and
error classes only: never payload values or exception messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gigi_core.jobs.models import JobContext

if TYPE_CHECKING:
    from gigi_core.jobs.service import JobService
    from gigi_core.jobs.spec import JobSpec

log = logging.getLogger("gigi_core.jobs")


def utcnow() -> datetime:
    return datetime.now(UTC)


class JobTimeout(Exception):
    """The job ran longer than its registered ``timeout``."""


@dataclass
class Running:
    """A job executing here: its context, the task running its function, the fence."""

    ctx: JobContext
    attempt: int
    task: asyncio.Task[Any] | None = None
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    def stop(self, reason: str, grace: float) -> None:
        """Ask the job to stop (``ctx.cancelled``); cancel its task after ``grace`` seconds."""
        if reason == "lost" or self.ctx._stop_reason is None:
            self.ctx._stop_reason = reason
        if self.task is None or self.task.done():
            return
        if reason == "lost" or grace <= 0:
            self.task.cancel()
        elif self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(grace, self.task.cancel)


def _where(exc: BaseException) -> str:
    """Where the exception was raised (file:line in function): code location, never data."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return "unknown location"
    code = last.tb_frame.f_code
    return f"{os.path.basename(code.co_filename)}:{last.tb_lineno} in {code.co_name}"


class Worker:
    """One worker session (``start`` to ``close``, or one ``run_until_idle``)."""

    def __init__(self, service: JobService) -> None:
        self.service = service
        self.kernel = service.kernel
        self.store = service.store
        self.settings = service.settings
        self.backend = service.backend
        self.id = f"{socket.gethostname()[:60]}:{os.getpid()}:{secrets.token_hex(4)}"
        self.running: dict[str, Running] = {}
        self.stopping = False
        self._executing: set[asyncio.Task[Any]] = set()
        self._spawned: set[asyncio.Task[Any]] = set()  # held so they are not collected
        self._loops: list[asyncio.Task[Any]] = []
        self.dispatcher = self.backend.dispatcher(self)

    @property
    def specs(self) -> dict[str, JobSpec]:
        return self.kernel.registry.jobs

    def stale_before(self, now: datetime) -> datetime:
        return now - timedelta(seconds=self.settings.stall_seconds)

    # -- lifecycle ----------------------------------------------------------------------

    def start_loops(self) -> None:
        from gigi_core.jobs.schedule import Scheduler

        self.scheduler = Scheduler(self.service)
        self._loops = [
            asyncio.create_task(self._heartbeat_loop(), name="gigi-jobs-heartbeat"),
            asyncio.create_task(self._housekeeping_loop(), name="gigi-jobs-schedules"),
        ]

    async def run(self, *, until_idle: bool) -> None:
        """Claim and run jobs until stopped (or, with ``until_idle``, until nothing is due)."""
        self.start_loops()
        try:
            if until_idle:
                await self.scheduler.fire_due(utcnow())
            await self.dispatcher.run(until_idle=until_idle)
            if self._executing:
                await asyncio.gather(*self._executing, return_exceptions=True)
        finally:
            await self._stop_loops()

    async def close(self) -> None:
        """Stop claiming; running jobs see ``ctx.cancelled``, then are cancelled after a grace."""
        self.stopping = True
        await self.dispatcher.stop()
        for run in list(self.running.values()):
            run.stop("stop", self.settings.grace_seconds)
        if self._executing:
            await asyncio.wait(set(self._executing), timeout=self.settings.grace_seconds + 5)

    async def _stop_loops(self) -> None:
        for task in self._loops:
            task.cancel()
        for task in self._loops:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._loops = []

    def changed(self) -> None:
        self.dispatcher.wake()

    # -- one job ------------------------------------------------------------------------

    def spawn(self, row: Any) -> None:
        task = asyncio.create_task(self.execute(row), name=f"gigi-job-{row._mapping['name']}")
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    async def execute(self, row: Any) -> None:
        """Run one claimed job to an outcome; never raises but for our own cancellation."""
        m = row._mapping
        job_id, name, attempt = m["id"], m["name"], m["attempts"]
        me = asyncio.current_task()
        if me is not None:
            self._executing.add(me)
        try:
            spec = self.specs.get(name)
            if m["cancel_requested"]:
                await self._finish(job_id, attempt, "cancelled")
                return
            if attempt > m["retries"] + 1:  # its worker died on every attempt
                await self._finish(job_id, attempt, "failed", error_class="WorkerLost")
                log.error("job %s %s failed: its worker stopped answering", name, job_id)
                return
            if spec is None or self.stopping:
                await self._requeue(job_id, name, attempt, utcnow(), None, count_attempt=False)
                return
            await self._run(spec, m, attempt)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store failed: the job is reclaimed once stale
            log.warning(
                "job %s %s: recording its outcome failed: %s", name, job_id, type(exc).__name__
            )
        finally:
            if me is not None:
                self._executing.discard(me)
            self.changed()

    async def _run(self, spec: JobSpec, m: Any, attempt: int) -> None:
        job_id = m["id"]

        async def report(done: int, total: int | None, note: str | None) -> None:
            try:
                await self.store.report(job_id, attempt, self.id, (done, total, note))
            except Exception as exc:
                log.warning(
                    "job %s %s: progress not recorded: %s", spec.name, job_id, type(exc).__name__
                )

        ctx = JobContext(
            job_id=job_id, name=spec.name, attempt=attempt, key=m["key"], kernel=self.kernel,
            reporter=report,
        )  # fmt: skip
        run = Running(ctx, attempt)
        self.running[job_id] = run
        log.debug("job %s %s: attempt %d started", spec.name, job_id, attempt)
        inner = asyncio.create_task(self._call(spec, ctx, dict(m["payload"] or {})))
        run.task = inner
        try:
            try:
                await asyncio.wait({inner})
            except asyncio.CancelledError:  # the worker itself is being torn down
                inner.cancel()
                ctx._stop_reason = ctx._stop_reason or "stop"
                await asyncio.wait({inner})
                await asyncio.shield(self._settle(spec, m, run, inner))
                raise
            await self._settle(spec, m, run, inner)
        finally:
            if run.timer is not None:
                run.timer.cancel()
            if self.running.get(job_id) is run:
                del self.running[job_id]

    async def _call(self, spec: JobSpec, ctx: JobContext, payload: dict[str, Any]) -> None:
        timeout = asyncio.timeout(spec.timeout)
        try:
            async with timeout:
                await spec.fn(ctx, **payload)
        except TimeoutError:
            if timeout.expired():
                raise JobTimeout() from None
            raise

    async def _settle(self, spec: JobSpec, m: Any, run: Running, inner: asyncio.Task[Any]) -> None:
        ctx, job_id, attempt = run.ctx, m["id"], run.attempt
        reason = ctx._stop_reason
        exc = None if inner.cancelled() else inner.exception()
        stopped_early = inner.cancelled() or exc is not None or ctx._seen_stop
        pending = ctx.pending
        progress = (pending.done, pending.total, pending.note) if pending else None
        if reason == "lost":
            log.warning("job %s %s: another worker took it over (stalled here)", spec.name, job_id)
        elif reason == "cancel" and stopped_early:
            await self._finish(job_id, attempt, "cancelled", progress=progress)
            log.info("job %s %s: cancelled", spec.name, job_id)
        elif reason == "stop" and stopped_early:
            await self._requeue(job_id, spec.name, attempt, utcnow(), None, count_attempt=False)
            log.info("job %s %s: stopped with the worker; queued again", spec.name, job_id)
        elif exc is None and not inner.cancelled():
            await self._finish(job_id, attempt, "done", progress=progress)
            log.debug("job %s %s: done", spec.name, job_id)
        else:
            await self._failed(spec, m, attempt, exc or asyncio.CancelledError(), progress)

    async def _failed(
        self, spec: JobSpec, m: Any, attempt: int, exc: BaseException, progress: Any
    ) -> None:
        error_class = type(exc).__name__
        where = _where(exc)
        retries = m["retries"]
        if attempt <= retries and getattr(exc, "retry_job", True):
            delay = self.backoff(attempt)
            await self._requeue(
                m["id"], spec.name, attempt, utcnow() + timedelta(seconds=delay), error_class,
                count_attempt=True, progress=progress,
            )  # fmt: skip
            log.warning(
                "job %s %s: attempt %d of %d raised %s (%s); retrying in %.1f s",
                spec.name, m["id"], attempt, retries + 1, error_class, where, delay,
            )  # fmt: skip
        else:
            await self._finish(
                m["id"], attempt, "failed", error_class=error_class, progress=progress
            )
            log.error(
                "job %s %s failed after %d attempt(s): %s (%s)",
                spec.name, m["id"], attempt, error_class, where,
            )  # fmt: skip

    def backoff(self, attempt: int) -> float:
        """Exponential with jitter: half the step fixed, half random, capped."""
        step = min(
            self.settings.retry_max_seconds, self.settings.retry_base_seconds * 2 ** (attempt - 1)
        )
        return step / 2 + random.uniform(0, step / 2)

    async def _finish(self, job_id: str, attempt: int, status: str, **kw: Any) -> None:
        await self.store.finish(job_id, attempt, self.id, status, utcnow(), **kw)

    async def _requeue(
        self,
        job_id: str,
        name: str,
        attempt: int,
        run_at: datetime,
        error_class: str | None,
        *,
        count_attempt: bool,
        progress: Any = None,
    ) -> None:
        async with self.store.tx() as s:
            if await self.store.requeue(
                s, job_id, attempt, self.id, run_at, error_class=error_class,
                count_attempt=count_attempt, progress=progress,
            ):  # fmt: skip
                await self.service.redispatch(s, job_id, name, run_at)

    # -- background loops ---------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        """Beat for our running jobs; pick up cancel requests; drop jobs taken over elsewhere."""
        while True:
            await asyncio.sleep(self.settings.heartbeat_seconds)
            held = {job_id: run.attempt for job_id, run in self.running.items()}
            if not held:
                continue
            try:
                alive = await self.store.heartbeat(held, self.id, utcnow())
            except Exception as exc:
                log.warning("jobs heartbeat failed: %s", type(exc).__name__)
                continue
            for job_id, attempt in held.items():
                run = self.running.get(job_id)
                if run is None or run.attempt != attempt:
                    continue  # finished meanwhile
                if job_id not in alive:
                    run.stop("lost", 0)
                elif alive[job_id]:
                    run.stop("cancel", self.settings.grace_seconds)

    async def _housekeeping_loop(self) -> None:
        """Fire cron ticks as they come; prune old done rows now and then."""
        pruned_at: datetime | None = None
        while True:
            now = utcnow()
            try:
                next_tick = await self.scheduler.fire_due(now)
            except Exception as exc:
                log.warning("job schedules: firing failed: %s", type(exc).__name__)
                next_tick = None
            if pruned_at is None or now - pruned_at > timedelta(hours=1):
                pruned_at = now
                await self._prune(now)
            wait = 60.0 if next_tick is None else (next_tick - utcnow()).total_seconds()
            await asyncio.sleep(min(60.0, max(0.01, wait)))

    async def _prune(self, now: datetime) -> None:
        before = now - timedelta(days=self.settings.keep_done_days)
        try:
            count = await self.store.prune_done(before)
            await self.backend.prune(before)
        except Exception as exc:
            log.warning("jobs: pruning old rows failed: %s", type(exc).__name__)
            return
        if count:
            log.info("jobs: pruned %d done job(s) older than %s", count, before.date())
