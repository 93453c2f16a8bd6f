"""`/memory sync`: a channel's past messages through ``kernel.history``, gated like live ones,
checkpointed per page, resumable after a crash, never inserted twice, stopped by a policy
change and failed at once when Gigi loses Read Message History."""

from __future__ import annotations

import asyncio

import pytest
from memory_helpers import MEMBER, ago, call, count, enable, message
from memory_history import FakeHistory, finish, history, sync

from gigi_core import PolicyDenied, ToolExecutionError
from gigi_core.testing.outbox import RecordingPoster


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setenv("GIGI_JOBS_RETRY_BASE_SECONDS", "0")


async def test_a_sync_remembers_past_messages_once_and_reports_them(kernel, fast_retries) -> None:
    await enable(kernel, "c1")
    reader = FakeHistory(history(250))
    kernel.history.register("fake", reader)
    started = await sync(kernel)
    assert started["job"]["follow"] is True and "Syncing <#c1>" in started["message"]
    await finish(kernel)
    assert await count(kernel, text="postgres") == 250
    assert reader.asked == [None, "5150", "5050"]  # newest first, 100 a page
    status = await call(kernel, "status")
    [row] = status["syncs"]
    assert (row["status"], row["pages"], row["imported"], row["skipped"]) == ("done", 3, 250, 0)
    await sync(kernel)  # again: every id is already stored
    await finish(kernel)
    assert await count(kernel, text="postgres") == 250
    [row] = (await call(kernel, "status"))["syncs"]
    assert (row["imported"], row["skipped"]) == (0, 250)


async def test_a_crash_mid_sync_resumes_from_the_checkpoint(kernel, fast_retries) -> None:
    await enable(kernel, "c1")
    reader = FakeHistory(history(250), fail_on_page=2)
    kernel.history.register("fake", reader)
    await sync(kernel)
    await finish(kernel)
    assert await count(kernel, text="postgres") == 250
    assert reader.asked == [None, "5150", "5150", "5050"]  # page 2 again, page 1 never


async def test_the_gate_applies_bots_retention_and_days(kernel, fast_retries) -> None:
    await enable(kernel, "c1", days=5)
    msgs = [
        message("recent postgres", message_id="7001", created_at=ago(days=1)),
        message("bot postgres", message_id="7002", created_at=ago(days=1), author_is_bot=True),
        message("ancient postgres", message_id="6999", created_at=ago(days=9)),
    ]
    kernel.history.register("fake", FakeHistory(sorted(msgs, key=lambda m: m.message_id)))
    await sync(kernel)
    await finish(kernel)
    assert await count(kernel, text="postgres") == 1  # the bot's, and past retention: no


async def test_days_limits_how_far_back(kernel, fast_retries) -> None:
    await enable(kernel, "c1", days=30)
    msgs = [
        message("postgres a", message_id="8001", created_at=ago(days=20)),
        message("postgres b", message_id="8002", created_at=ago(days=2)),
    ]
    reader = FakeHistory(msgs)
    kernel.history.register("fake", reader)
    await sync(kernel, days=7)
    await finish(kernel)
    assert await count(kernel, text="postgres") == 1


async def test_losing_read_history_fails_at_once_and_says_why(kernel, fast_retries) -> None:
    await enable(kernel, "c1")
    reader = FakeHistory(history(10))
    reader.forbidden = True
    kernel.history.register("fake", reader)
    started = await sync(kernel)
    await finish(kernel)
    info = await kernel.jobs.get(started["job"]["id"])
    assert info.status == "failed" and info.error_class == "HistoryForbidden"
    assert len(reader.asked) == 1  # no retries: they could not help
    [row] = (await call(kernel, "status"))["syncs"]
    assert row["status"] == "failed" and row["error"].startswith("HistoryForbidden: ")


async def test_a_paused_channel_stops_the_sync(kernel, fast_retries) -> None:
    await enable(kernel, "c1")
    reader = FakeHistory(history(250))
    kernel.history.register("fake", reader)
    await sync(kernel)
    await kernel.set_channel_state("g1", "c1", "paused", by="admin")
    await finish(kernel)
    assert await count(kernel, text="postgres") == 0 and reader.asked == []
    [row] = (await call(kernel, "status"))["syncs"]
    assert (row["status"], row["error"]) == ("stopped", "policy changed")
    with pytest.raises(ToolExecutionError, match="is paused"):
        await sync(kernel)


async def test_refusals_name_the_fix(kernel) -> None:
    with pytest.raises(ToolExecutionError, match="/memory enable"):
        await sync(kernel)
    await enable(kernel, "c1")
    kernel.outbox.register("console-like", RecordingPoster(guilds={"g1"}))
    with pytest.raises(ToolExecutionError, match="cannot read this server's message history"):
        await sync(kernel)  # a surface here serves g1 but reads no history: the job never runs
    kernel.history.register("fake", FakeHistory([]))
    with pytest.raises(PolicyDenied):
        await call(kernel, "sync", actor=MEMBER, channel="c1")


async def test_without_a_surface_here_the_sync_is_queued_for_the_bot(kernel) -> None:
    """The web dashboard runs no surface: the job waits for the bot's process."""
    await enable(kernel, "c1")
    started = await sync(kernel)
    info = await kernel.jobs.get(started["job"]["id"])
    assert info.name == "memory.sync" and info.status in ("queued", "running")


def test_gigi_memory_sync_queues_the_job_from_a_shell(tmp_path, monkeypatch) -> None:
    """The shell cannot read history itself: it queues the job for the bot's process."""
    import asyncio

    import click
    import gigi_memory
    from click.testing import CliRunner

    from gigi_core.store.sealing import generate_key
    from gigi_core.testing import open_test_kernel

    key, url = generate_key(), f"sqlite+aiosqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setenv("GIGI_SECRET_KEY", key)
    monkeypatch.setenv("GIGI_DATABASE_URL", url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "memory")

    async def prepare() -> None:
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=url, secret_key=key
        ) as k:
            await k.enable_plugin("g1", "memory")
            await enable(k, "c1")

    asyncio.run(prepare())

    @click.group()
    def root() -> None:
        pass

    gigi_memory.register_commands(root)
    out = CliRunner().invoke(root, ["memory", "sync", "--guild", "g1", "--channel", "c1"])
    assert out.exit_code == 0, out.output
    assert "Syncing c1" in out.output and "(job " in out.output
    refused = CliRunner().invoke(root, ["memory", "sync", "--guild", "g1", "--channel", "c9"])
    assert refused.exit_code == 1 and "/memory" not in refused.output  # the shell's syntax
    assert "channel c9 is not remembered (gigi memory enable --guild g1 --channel c9" in (
        refused.output
    )


async def test_a_purge_mid_sync_stops_it(kernel, fast_retries) -> None:
    await enable(kernel, "c1")

    class PurgeOnSecondPage(FakeHistory):
        async def page(self, guild_id, channel_id, *, before, limit):
            if len(self.asked) == 1:  # an admin confirmed /memory purge channel:c1 meanwhile
                from gigi_memory.service import service_of

                await service_of(kernel).store.purge_channel("g1", channel_id="c1")
            return await super().page(guild_id, channel_id, before=before, limit=limit)

    reader = PurgeOnSecondPage(history(250))
    kernel.history.register("fake", reader)
    await sync(kernel)
    await kernel.jobs.run_until_idle()
    assert len(reader.asked) == 2  # the page after the purge is the last one read
    assert (await call(kernel, "status"))["syncs"] == []


async def test_deleting_a_members_data_forgets_that_they_started_a_sync(kernel, fast_retries):
    from memory_helpers import ADMIN, rows

    await enable(kernel, "c1")
    kernel.history.register("fake", FakeHistory(history(3)))
    await sync(kernel)
    await finish(kernel)
    assert [r[0] for r in await rows(kernel, "SELECT started_by FROM memory_backfills")] == [
        ADMIN.id
    ]
    await kernel.privacy.delete(ADMIN.id, "g1")
    assert [r[0] for r in await rows(kernel, "SELECT started_by FROM memory_backfills")] == [None]


async def test_a_sync_after_a_privacy_delete_never_brings_the_member_back(kernel, fast_retries):
    from memory_helpers import dump_text, rows

    await enable(kernel, "c1")
    old = [
        message(
            "canaryerased old words", message_id="9001", author_id="u7", created_at=ago(days=3)
        ),
        message("someone else postgres", message_id="9002", author_id="u8", created_at=ago(days=3)),
    ]
    kernel.history.register("fake", FakeHistory(old))
    await kernel.privacy.delete("u7", "g1")  # before any sync: nothing stored yet
    await sync(kernel)
    await finish(kernel)
    stored = await dump_text(kernel)
    assert "canaryerased" not in stored and "someone else" in stored
    marks = await rows(kernel, "SELECT author_key FROM memory_erasures")
    assert marks and all("u7" not in r[0] for r in marks)  # a pseudonym, never the id
    later = message(
        "u7 came back canarynew", message_id="9003", author_id="u7", created_at=ago(seconds=0)
    )
    kernel.history.register("fake", FakeHistory([*old, later]))
    await sync(kernel)
    await finish(kernel)
    assert "canarynew" in await dump_text(kernel)  # what they wrote after is theirs to share


async def _paused_span(kernel, channel: str = "c1") -> tuple:
    """Pause and resume the channel; the recorded span (start, end)."""
    await kernel.set_channel_state("g1", channel, "paused", by="admin")
    await asyncio.sleep(0.05)
    await kernel.set_channel_state("g1", channel, "active", by="admin")
    [span] = await kernel.channels.pause_ranges("g1", channel)
    return span.started_at, span.ended_at


async def test_a_sync_takes_nothing_from_while_the_channel_was_paused(kernel, fast_retries) -> None:
    """Live delivery withheld those messages; history must not bring them back."""
    await enable(kernel, "c1")
    start, end = await _paused_span(kernel)
    msgs = [
        *history(3),  # ten days ago, long before the pause
        message(
            "postgres said while paused", message_id="9001", created_at=start + (end - start) / 2
        ),
        message("postgres just before resume", message_id="9002", created_at=end),
    ]
    kernel.history.register("fake", FakeHistory(msgs))
    await sync(kernel)
    await finish(kernel)
    assert await count(kernel, text="postgres") == 3
    assert await count(kernel, text="paused") == 0 and await count(kernel, text="resume") == 0
    [row] = (await call(kernel, "status"))["syncs"]
    assert (row["status"], row["imported"], row["skipped"]) == ("done", 3, 2)


async def test_a_thread_sync_skips_its_parents_paused_span(kernel, fast_retries) -> None:
    await enable(kernel, "c1")
    await enable(kernel, "t1")
    start, end = await _paused_span(kernel, "c1")  # pausing a channel pauses its threads
    during = start + (end - start) / 2
    msgs = [
        message(
            "thread postgres early",
            message_id="9101",
            channel_id="t1",
            parent_channel_id="c1",
            channel_kind="thread",
            created_at=ago(days=3),
        ),
        message(
            "thread postgres paused",
            message_id="9102",
            channel_id="t1",
            parent_channel_id="c1",
            channel_kind="thread",
            created_at=during,
        ),
    ]
    kernel.history.register("fake", FakeHistory(msgs))
    await call(kernel, "sync", channel="t1", channel_id="t1")
    await finish(kernel)
    assert await count(kernel, text="postgres", channel="t1", channel_id="t1") == 1
    assert await count(kernel, text="paused", channel="t1", channel_id="t1") == 0
