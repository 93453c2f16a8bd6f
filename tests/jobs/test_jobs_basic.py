"""Deferring and running jobs on both backends: payloads, keys, run_at, progress, restarts."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta

import pytest

from gigi_core.jobs import JobContext, JobError, JobInfo, JobNotFound
from tests.jobs.helpers import drain_until, jobs_kernel, until


def recorder() -> tuple[list[tuple[str, int, dict]], object]:
    ran: list[tuple[str, int, dict]] = []

    async def record(ctx: JobContext, **payload: object) -> None:
        ran.append((ctx.job_id, ctx.attempt, payload))

    return ran, record


async def test_defer_runs_the_job_with_its_payload(database_url, tmp_path) -> None:
    ran, record = recorder()
    async with jobs_kernel(tmp_path, database_url, {"t.record": (record, {})}) as kernel:
        job_id = await kernel.jobs.defer("t.record", {"guild_id": "g1", "n": 3})
        queued = await kernel.jobs.get(job_id)
        assert (queued.status, queued.attempts, queued.retries) == ("queued", 0, 3)
        assert queued.payload_keys == ("guild_id", "n")
        await kernel.jobs.run_until_idle()
        assert ran == [(job_id, 1, {"guild_id": "g1", "n": 3})]
        done = await kernel.jobs.get(job_id)
        assert done.status == "done" and done.attempts == 1 and done.error_class is None
        assert done.started_at is not None and done.finished_at >= done.started_at
        assert done.run_at.tzinfo is UTC and done.created_at.tzinfo is UTC
        await kernel.jobs.run_until_idle()  # nothing runs twice
        assert len(ran) == 1


async def test_a_key_keeps_one_queued_job(database_url, tmp_path) -> None:
    ran, record = recorder()
    async with jobs_kernel(tmp_path, database_url, {"t.record": (record, {})}) as kernel:
        first = await kernel.jobs.defer("t.record", {"n": 1}, key="channel:1")
        again = await kernel.jobs.defer("t.record", {"n": 2}, key="channel:1")
        other = await kernel.jobs.defer("t.record", {"n": 3}, key="channel:2")
        concurrent = await asyncio.gather(
            *(kernel.jobs.defer("t.record", {"n": 4}, key="channel:3") for _ in range(5))
        )
        assert first == again and other != first and len(set(concurrent)) == 1
        await kernel.jobs.run_until_idle()
        assert sorted(p["n"] for _, _, p in ran) == [1, 3, 4]  # the first payload wins
        # once it has started, the key is free: a new deferral queues a new job
        later = await kernel.jobs.defer("t.record", {"n": 5}, key="channel:1")
        assert later != first
        assert (await kernel.jobs.get(later)).key == "channel:1"


async def test_run_at_later_waits_until_it_is_due(database_url, tmp_path) -> None:
    ran, record = recorder()
    async with jobs_kernel(tmp_path, database_url, {"t.record": (record, {})}) as kernel:
        run_at = datetime.now(UTC) + timedelta(seconds=0.4)
        job_id = await kernel.jobs.defer("t.record", {}, run_at=run_at)
        await kernel.jobs.run_until_idle()
        assert ran == [] and (await kernel.jobs.get(job_id)).status == "queued"
        info = await drain_until(kernel, job_id, "done")
        assert ran and info.started_at >= run_at
        with pytest.raises(JobError, match="timezone-aware"):
            await kernel.jobs.defer("t.record", {}, run_at=datetime.now())


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"when": datetime(2024, 1, 1, tzinfo=UTC)}, "not JSON"),
        ({"ids": {1, 2}}, "not JSON"),
        ({"x": math.nan}, "not JSON"),
        (["a", "b"], "JSON object"),
        ({1: "one"}, "JSON object"),
        ({"text": "x" * 70_000}, "over 64 KiB"),
    ],
)
async def test_the_payload_must_be_a_small_json_object(
    database_url, tmp_path, payload, says
) -> None:
    _, record = recorder()
    async with jobs_kernel(tmp_path, database_url, {"t.record": (record, {})}) as kernel:
        with pytest.raises(JobError) as info:
            await kernel.jobs.defer("t.record", payload)
        message = str(info.value)
        assert "t.record" in message and says in message
        assert "xxxx" not in message and "2024" not in message  # values are not quoted
        assert await kernel.jobs.list() == []


async def test_an_unknown_job_names_the_registered_ones(database_url, tmp_path) -> None:
    _, record = recorder()
    async with jobs_kernel(tmp_path, database_url, {"t.record": (record, {})}) as kernel:
        with pytest.raises(JobError, match=r"'t\.nope' \(registered: .*t\.record"):
            await kernel.jobs.defer("t.nope", {})
        with pytest.raises(JobNotFound):
            await kernel.jobs.get("0" * 32)
        with pytest.raises(JobNotFound):
            await kernel.jobs.cancel("0" * 32)
        with pytest.raises(JobError, match="unknown job status"):
            await kernel.jobs.list(status="sleeping")


async def test_progress_is_recorded(database_url, tmp_path) -> None:
    seen: list[JobInfo] = []

    async def count(ctx: JobContext, total: int) -> None:
        for done in range(total + 1):
            await ctx.progress(done, total, note=f"step {done}")
            if done == 1:
                await asyncio.sleep(0.3)  # past the write throttle
                seen.append(await ctx.kernel.jobs.get(ctx.job_id))

    async with jobs_kernel(tmp_path, database_url, {"t.count": (count, {})}) as kernel:
        job_id = await kernel.jobs.defer("t.count", {"total": 4})
        await kernel.jobs.run_until_idle()
        [middle] = seen
        assert middle.status == "running" and middle.progress.total == 4
        info = await kernel.jobs.get(job_id)
        assert (info.progress.done, info.progress.total, info.progress.note) == (4, 4, "step 4")


async def test_queued_jobs_survive_a_restart(database_url, tmp_path) -> None:
    ran, record = recorder()
    jobs = {"t.record": (record, {})}
    async with jobs_kernel(tmp_path, database_url, jobs) as kernel:
        job_id = await kernel.jobs.defer("t.record", {"n": 1})
        keyed = await kernel.jobs.defer("t.record", {"n": 2}, key="k")
    assert ran == []
    async with jobs_kernel(tmp_path, database_url, jobs) as kernel:
        assert await kernel.jobs.defer("t.record", {"n": 3}, key="k") == keyed
        await kernel.jobs.run_until_idle()
        assert sorted(p["n"] for _, _, p in ran) == [1, 2]
        assert (await kernel.jobs.get(job_id)).status == "done"


async def test_list_filters_and_resolves_short_ids(database_url, tmp_path) -> None:
    ran, record = recorder()

    async def fail(ctx: JobContext) -> None:
        raise RuntimeError("no")

    jobs = {"t.record": (record, {}), "t.fail": (fail, {"retries": 0})}
    async with jobs_kernel(tmp_path, database_url, jobs) as kernel:
        ok = await kernel.jobs.defer("t.record", {})
        bad = await kernel.jobs.defer("t.fail")
        later = await kernel.jobs.defer(
            "t.record", {}, run_at=datetime.now(UTC) + timedelta(hours=1)
        )
        await kernel.jobs.run_until_idle()
        assert [i.id for i in await kernel.jobs.list(status="failed")] == [bad]
        assert [i.id for i in await kernel.jobs.list(status="queued")] == [later]
        assert {i.id for i in await kernel.jobs.list(name="t.record")} == {ok, later}
        assert len(await kernel.jobs.list(limit=2)) == 2
        assert await kernel.jobs.resolve(ok[:10]) == ok
        assert ok in (await kernel.jobs.get(ok)).as_dict()["id"]
        assert "payload_keys" not in (await kernel.jobs.get(ok)).as_dict()


async def test_retry_queues_a_failed_job_again(database_url, tmp_path) -> None:
    attempts: list[int] = []

    async def flaky(ctx: JobContext) -> None:
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise ConnectionError("down")

    async with jobs_kernel(tmp_path, database_url, {"t.flaky": (flaky, {"retries": 0})}) as kernel:
        job_id = await kernel.jobs.defer("t.flaky")
        failed = await drain_until(kernel, job_id, "failed")
        assert failed.error_class == "ConnectionError" and failed.attempts == 1
        await kernel.jobs.retry(job_id)
        queued = await kernel.jobs.get(job_id)
        assert queued.status == "queued" and queued.attempts == 0
        done = await drain_until(kernel, job_id, "done")
        assert done.attempts == 1 and attempts == [1, 1]
        with pytest.raises(JobError, match="only failed or cancelled jobs"):
            await kernel.jobs.retry(job_id)


async def test_a_worker_started_in_the_kernel_picks_up_new_jobs(database_url, tmp_path) -> None:
    ran, record = recorder()
    async with jobs_kernel(tmp_path, database_url, {"t.record": (record, {})}) as kernel:
        await kernel.jobs.start()
        await kernel.jobs.start()  # idempotent
        job_id = await kernel.jobs.defer("t.record", {"n": 1})
        await until(lambda: len(ran) == 1, within=5)
        await kernel.jobs.run_until_idle()  # waits for the running worker instead
        assert (await kernel.jobs.get(job_id)).status == "done"


async def test_the_first_progress_report_is_written_on_a_machine_booted_lately(
    monkeypatch,
) -> None:
    """``time.monotonic()`` counts from boot: "never reported" must not read as "just now"."""
    from types import SimpleNamespace

    import gigi_core.jobs.models as models

    monkeypatch.setattr(models, "time", SimpleNamespace(monotonic=lambda: 0.1))
    written: list[tuple[int, int | None, str | None]] = []

    async def reporter(done: int, total: int | None, note: str | None) -> None:
        written.append((done, total, note))

    ctx = JobContext(job_id="j", name="t", attempt=1, key=None, kernel=None, reporter=reporter)
    await ctx.progress(1, 10)
    assert written == [(1, 10, None)] and ctx.pending is None
