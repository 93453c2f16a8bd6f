"""Cron schedules: each tick fires once across every worker process, idempotently.

A tick fires when a conditional UPDATE moves ``gigi_job_schedules.last_tick`` forward;
only one transaction can win it, and the job it defers is inserted in that same
transaction. A schedule seen for the first time is recorded without firing, so a new
install does not run every daily job at once; after downtime only the latest missed tick
fires.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from croniter import croniter
from sqlalchemy.exc import IntegrityError

from gigi_core.jobs.worker import utcnow

if TYPE_CHECKING:
    from gigi_core.jobs.service import JobService

log = logging.getLogger("gigi_core.jobs")


def latest_tick(expression: str, now: datetime) -> datetime:
    """The most recent tick at or before ``now`` (UTC)."""
    return croniter(expression, now + timedelta(microseconds=1)).get_prev(datetime)


def next_tick(expression: str, now: datetime) -> datetime:
    return croniter(expression, now).get_next(datetime)


class Scheduler:
    def __init__(self, service: JobService) -> None:
        self.service = service
        self._seen: dict[str, datetime] = {}  # the last tick this process handled per job

    async def fire_due(self, now: datetime) -> datetime | None:
        """Fire every schedule's latest tick once; return when the next tick is due."""
        upcoming: datetime | None = None
        for name, spec in sorted(self.service.kernel.registry.jobs.items()):
            if spec.schedule is None:
                continue
            tick = latest_tick(spec.schedule, now)
            if self._seen.get(name) != tick:
                await self._fire(name, spec.schedule, tick, now)
                self._seen[name] = tick
            following = next_tick(spec.schedule, now)
            upcoming = following if upcoming is None else min(upcoming, following)
        return upcoming

    async def _fire(self, name: str, schedule: str, tick: datetime, now: datetime) -> None:
        service = self.service
        try:
            async with service.store.tx() as s:
                outcome = await service.store.advance_tick(s, name, schedule, tick, now)
                if outcome == "fired":
                    job_id = await service.insert_job(
                        s, name, {}, key=f"tick:{tick.isoformat()}", run_at=utcnow(), lock_key=False
                    )
                    log.info("job %s %s: deferred for the %s tick", name, job_id, tick.isoformat())
        except IntegrityError:  # another worker seeded the schedule at the same moment
            return
