"""`/memory sync` under faults, with a started job worker: cancelled mid-way, the process
closed during page 2 and opened again, Read Message History lost on page 2 (both backends)."""

from __future__ import annotations

import asyncio

import pytest
from memory_helpers import call, count, enable, rows
from memory_history import FakeHistory, GatedHistory, ended, history, sync

from gigi_core.testing import open_test_kernel


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIGI_JOBS_RETRY_BASE_SECONDS", "0")


async def stored_once(kernel) -> int:
    """How many messages are stored, after checking none is stored twice."""
    [(total, distinct)] = await rows(
        kernel, "SELECT COUNT(*), COUNT(DISTINCT message_id) FROM memory_messages"
    )
    assert total == distinct, f"{total - distinct} message(s) stored twice"
    return total


async def checkpoint(kernel) -> tuple:
    [row] = await rows(kernel, "SELECT status, cursor, pages, imported FROM memory_backfills")
    return tuple(row)


async def test_cancelling_a_running_sync_stops_it_after_the_current_page(kernel) -> None:
    await enable(kernel, "c1")
    reader = GatedHistory(history(250))
    kernel.history.register("fake", reader)
    await kernel.jobs.start()
    started = await sync(kernel)
    job_id = started["job"]["id"]
    await asyncio.wait_for(reader.reading.wait(), 15)  # page 1 stored, page 2 being read
    assert await kernel.jobs.cancel(job_id) is True
    reader.go.set()  # page 2 arrives within the grace period (10 s): it is stored
    info = await ended(kernel, job_id)
    assert info.status == "cancelled"
    assert await stored_once(kernel) == 200 == await count(kernel, text="postgres")
    assert len(reader.asked) == 2  # page 3 was never asked for
    [row] = (await call(kernel, "status"))["syncs"]
    assert (row["status"], row["error"], row["pages"], row["imported"]) == (
        "stopped",
        "cancelled",
        2,
        200,
    )
    # A new sync reads from the newest again and adds only the 50 left.
    again = await sync(kernel)
    assert (await ended(kernel, again["job"]["id"])).status == "done"
    assert await stored_once(kernel) == 250
    [row] = (await call(kernel, "status"))["syncs"]
    assert (row["status"], row["imported"], row["skipped"]) == ("done", 50, 200)


async def test_a_restart_during_page_two_resumes_from_the_checkpoint(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_JOBS_GRACE_SECONDS", "0.2")  # closing waits 0.2 s for page 2
    msgs = history(250)
    async with open_test_kernel(tmp_path, plugins=["memory"], database_url=database_url) as k:
        await k.enable_plugin("g1", "memory")
        await enable(k, "c1")
        reader = GatedHistory(msgs)
        k.history.register("fake", reader)
        await k.jobs.start()
        job_id = (await sync(k))["job"]["id"]
        await asyncio.wait_for(reader.reading.wait(), 15)
        assert await stored_once(k) == 100
        assert await checkpoint(k) == ("running", "5150", 1, 100)
    # The process is gone while page 2 was being read (it never came back).
    async with open_test_kernel(tmp_path, plugins=["memory"], database_url=database_url) as k:
        again = FakeHistory(msgs)
        k.history.register("fake", again)
        await k.jobs.start()
        info = await ended(k, job_id, seconds=30)
        assert info.status == "done"
        assert again.asked == ["5150", "5050"]  # from the checkpoint: page 1 never again
        assert await stored_once(k) == 250 == await count(k, text="postgres")
        assert await checkpoint(k) == ("done", None, 3, 250)


async def test_read_history_lost_on_page_two_keeps_page_one_and_says_why(kernel) -> None:
    await enable(kernel, "c1")
    reader = GatedHistory(history(250), forbid_from=2)
    reader.go.set()
    kernel.history.register("fake", reader)
    await kernel.jobs.start()
    job_id = (await sync(kernel))["job"]["id"]
    info = await ended(kernel, job_id)
    assert (info.status, info.error_class, info.attempts) == ("failed", "HistoryForbidden", 1)
    assert reader.asked == [None, "5150"]  # no retries: they could not help
    assert await stored_once(kernel) == 100  # page 1 is kept
    assert await checkpoint(kernel) == ("failed", "5150", 1, 100)  # where it stopped
    [row] = (await call(kernel, "status"))["syncs"]
    assert row["error"].startswith("HistoryForbidden")
    assert "Read Message History" in row["error"]  # what to give Gigi back


async def test_a_job_started_before_its_record_landed_waits_for_it(kernel, monkeypatch) -> None:
    """A worker elsewhere can start the job between ``defer`` and the record's write."""
    await enable(kernel, "c1")
    kernel.history.register("fake", FakeHistory(history(250)))
    deferred = kernel.jobs.defer
    started: list[asyncio.Task] = []

    async def defer_and_start_at_once(*args, **kwargs):
        job_id = await deferred(*args, **kwargs)
        started.append(asyncio.create_task(kernel.jobs.run_until_idle()))
        await asyncio.sleep(0.3)  # the job is running and has found no record of itself
        return job_id

    monkeypatch.setattr(kernel.jobs, "defer", defer_and_start_at_once)
    job_id = (await sync(kernel))["job"]["id"]
    await started[0]
    assert (await ended(kernel, job_id)).status == "done"
    assert await stored_once(kernel) == 250
    assert await checkpoint(kernel) == ("done", None, 3, 250)


async def test_a_job_whose_record_never_lands_ends_without_reading(kernel, monkeypatch) -> None:
    import gigi_memory.ingest.backfill as backfill

    monkeypatch.setattr(backfill, "RECORD_WAIT_SECONDS", 0.2)
    await enable(kernel, "c1")
    reader = FakeHistory(history(10))
    kernel.history.register("fake", reader)
    job_id = await kernel.jobs.defer(backfill.JOB, {"guild_id": "g1", "channel_id": "c1"})
    await kernel.jobs.run_until_idle()
    assert (await ended(kernel, job_id)).status == "done"
    assert reader.asked == [] and await stored_once(kernel) == 0


async def test_a_record_naming_a_pruned_job_is_waited_past(kernel, monkeypatch) -> None:
    """The channel's last sync finished long ago and its job was pruned: a new job that
    starts before its record is written still waits for it (and then syncs)."""
    import gigi_memory.ingest.backfill as backfill
    import sqlalchemy as sa

    await enable(kernel, "c1")
    kernel.history.register("fake", FakeHistory(history(10)))
    first = (await sync(kernel))["job"]["id"]
    await kernel.jobs.run_until_idle()
    assert (await ended(kernel, first)).status == "done"
    async with kernel.db.engine.begin() as conn:  # as the jobs' pruning does
        await conn.execute(sa.text("DELETE FROM gigi_jobs WHERE id = :id"), {"id": first})
    monkeypatch.setattr(backfill, "RECORD_WAIT_SECONDS", 0.3)
    job_id = await kernel.jobs.defer(backfill.JOB, {"guild_id": "g1", "channel_id": "c1"})
    await kernel.jobs.run_until_idle()
    info = await ended(kernel, job_id)
    assert (info.status, info.attempts) == ("done", 1)  # waited, found no record of its own
