"""Cron schedules: a bad expression fails its plugin; each tick fires once across workers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from gigi_core.errors import PluginError
from gigi_core.jobs import JobContext
from gigi_core.jobs.schedule import Scheduler, latest_tick
from gigi_core.plugins import LoadOptions, load_plugins
from tests.jobs.helpers import JobsPlugin, jobs_kernel, until


async def noop(ctx: JobContext) -> None:
    return None


@pytest.mark.parametrize("expression", ["61 * * * *", "every day", "* * *", ""])
def test_a_cron_string_that_does_not_parse_fails_the_plugin(expression) -> None:
    plugin = JobsPlugin({"cronbad.tick": (noop, {"schedule": expression})})
    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("cronbad", plugin)])
    record = loaded.registry.records["cronbad"]
    assert record.status == "failed"
    assert "job 'cronbad.tick' of plugin cronbad" in record.error
    assert f"schedule {expression!r} is not a valid cron expression" in record.error
    assert "cronbad.tick" not in loaded.registry.jobs
    with pytest.raises(PluginError, match="plugin cronbad failed to load: .*cronbad.tick"):
        load_plugins(LoadOptions(load=frozenset(), strict=True), extra=[("cronbad", plugin)])


def test_latest_tick() -> None:
    at = datetime(2030, 1, 1, 10, 7, 30, tzinfo=UTC)
    assert latest_tick("*/5 * * * *", at) == datetime(2030, 1, 1, 10, 5, tzinfo=UTC)
    on_the_tick = datetime(2030, 1, 1, 10, 5, tzinfo=UTC)
    assert latest_tick("*/5 * * * *", on_the_tick) == on_the_tick


async def ticks(kernel) -> list:
    """This test's job only (the kernel schedules its own every five minutes too)."""
    return [j for j in await kernel.jobs.list() if j.name == "t.tick"]


async def test_a_tick_fires_once_across_two_workers(database_url, tmp_path) -> None:
    ran: list[str | None] = []

    async def tick(ctx: JobContext) -> None:
        ran.append(ctx.key)

    jobs = {"t.tick": (tick, {"schedule": "*/5 * * * *"})}
    async with (
        jobs_kernel(tmp_path, database_url, jobs, home="a") as a,
        jobs_kernel(tmp_path, database_url, jobs, home="b") as b,
    ):
        first, second = Scheduler(a.jobs), Scheduler(b.jobs)
        t0 = datetime(2030, 1, 1, 10, 2, tzinfo=UTC)
        await asyncio.gather(first.fire_due(t0), second.fire_due(t0))
        assert await ticks(a) == []  # first seen: recorded, not fired
        t1 = t0 + timedelta(minutes=4)  # past the 10:05 tick
        for _ in range(3):
            await asyncio.gather(first.fire_due(t1), second.fire_due(t1))
            await asyncio.gather(Scheduler(a.jobs).fire_due(t1), Scheduler(b.jobs).fire_due(t1))
        [job] = await ticks(a)
        assert job.key == "tick:2030-01-01T10:05:00+00:00" and job.name == "t.tick"
        t2 = t0 + timedelta(minutes=20)  # 10:10 and 10:15 were missed: only 10:20 fires
        await asyncio.gather(first.fire_due(t2), second.fire_due(t2))
        assert [j.key for j in await ticks(a)] == [
            "tick:2030-01-01T10:20:00+00:00",
            "tick:2030-01-01T10:05:00+00:00",
        ]
        await a.jobs.run_until_idle()
        assert sorted(ran) == sorted(j.key for j in await ticks(a))


async def test_a_schedule_every_second_fires_once_per_tick_with_two_workers(
    database_url, tmp_path
) -> None:
    fired: list[tuple[str | None, str | None]] = []

    async def tick(ctx: JobContext) -> None:
        fired.append((ctx.key, ctx.kernel.jobs.worker_id))

    jobs = {"t.second": (tick, {"schedule": "* * * * * *"})}  # six fields: seconds
    async with (
        jobs_kernel(tmp_path, database_url, jobs, home="a") as a,
        jobs_kernel(tmp_path, database_url, jobs, home="b") as b,
    ):
        await a.jobs.start()
        await b.jobs.start()
        await until(lambda: len(fired) >= 2, within=8)
    keys = [k for k, _ in fired]
    assert len(keys) == len(set(keys)), keys
