"""The embedded backend: an in-process worker polling the kernel's SQLite store.

SQLite has no SKIP LOCKED; a claim is one conditional UPDATE (status, per-name running
count) whose rowcount says who won, so several processes on one file never run a job
twice. A deferral in this process wakes the worker at once; other processes poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gigi_core.jobs.models import aware
from gigi_core.jobs.worker import utcnow

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from gigi_core.jobs.service import JobService
    from gigi_core.jobs.worker import Worker

log = logging.getLogger("gigi_core.jobs")


class LocalBackend:
    name = "sqlite"

    def __init__(self, service: JobService) -> None:
        self.service = service

    async def prepare(self) -> None:
        """Nothing to install: the kernel's migrations created the table."""

    async def dispatch(
        self, conn: AsyncConnection, job_id: str, name: str, run_at: datetime
    ) -> None:
        """Nothing to hand over: the row itself is the queue entry (no engine id)."""
        return None

    async def withdraw(self, conn: AsyncConnection, engine_ref: int | None) -> None:
        """Nothing to withdraw: the cancelled row is no longer claimable."""

    async def prune(self, before: datetime) -> None:
        return None

    async def close(self) -> None:
        return None

    def dispatcher(self, worker: Worker) -> LocalDispatcher:
        return LocalDispatcher(worker)


class LocalDispatcher:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._wake = asyncio.Event()
        self._stopped = False

    def wake(self) -> None:
        self._wake.set()

    async def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    async def run(self, *, until_idle: bool) -> None:
        w = self.worker
        settings = w.settings
        while not self._stopped:
            self._wake.clear()
            caps = {name: spec.concurrency for name, spec in w.specs.items()}
            here = Counter(run.ctx.name for run in w.running.values())
            open_caps = {name: cap for name, cap in caps.items() if here[name] < cap}
            free = min(settings.batch, settings.max_running - len(w.running))
            now = utcnow()
            claimed: list[Any] = []
            if open_caps and free > 0:
                try:
                    claimed = await w.store.claim_due(
                        open_caps, free, w.id, now, w.stale_before(now)
                    )
                except Exception as exc:
                    log.warning("jobs: claiming failed: %s", type(exc).__name__)
            for row in claimed:
                w.spawn(row)
            await asyncio.sleep(0)  # let them start (and count as running) first
            if claimed and len(claimed) >= free:
                continue  # there may be more due right now
            if until_idle and not w.running and not w._executing:
                if not caps or not await w.store.has_due(caps, now, w.stale_before(now)):
                    return
            await self._sleep(caps, now)

    async def _sleep(self, caps: dict[str, int], now: datetime) -> None:
        timeout = self.worker.settings.poll_seconds
        if caps and not self.worker.running:  # else a job ending wakes us anyway
            with contextlib.suppress(Exception):
                upcoming = aware(await self.worker.store.next_run_at(caps))
                if upcoming is not None and upcoming > now:
                    timeout = min(timeout, (upcoming - utcnow()).total_seconds())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), max(0.0, timeout))
