"""A delete or edit racing a backfill page: the mark it leaves wins over the older copy.

A sync page is read from Discord, then written; a delete or an edit arriving in between finds
no stored message. Without a mark the page would bring back deleted or edited-away text."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from gigi_memory.ingest.importer import parse_export, run_import
from gigi_memory.ingest.observe import create_op
from gigi_memory.ingest.operations import Op
from gigi_memory.policy import DAY_MS, now_ms
from gigi_memory.service import service_of
from memory_helpers import ago, call, count, dump_text, enable, message, publish, rows
from test_memory_import import export, msg
from test_memory_sync import FakeHistory, finish, sync

from gigi_core.events import MessageDeleted, MessageEdited


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setenv("GIGI_JOBS_RETRY_BASE_SECONDS", "0")


class RacingHistory(FakeHistory):
    """Serves the page as Discord had it, then the live events that raced it arrive."""

    def __init__(self, messages: list, kernel, events: list) -> None:
        super().__init__(messages)
        self.kernel, self.events = kernel, events

    async def page(self, guild_id, channel_id, *, before, limit):
        served = await super().page(guild_id, channel_id, before=before, limit=limit)
        for event in self.events:  # after Discord served the page, before memory wrote it
            await self.kernel.publish(event)
        self.events = []
        await self.kernel.events.drain()
        return served


async def marks(kernel) -> dict[str, str]:
    found = await rows(kernel, "SELECT message_id, kind FROM memory_tombstones")
    return {r.message_id: r.kind for r in found}


async def test_a_delete_or_edit_racing_a_sync_page_is_not_undone(kernel, fast_retries) -> None:
    await enable(kernel, "c1")
    old = ago(days=3)
    page = [
        message("canarydeletedqf postgres", message_id="9201", created_at=old),
        message("canaryeditedawayqc postgres", message_id="9202", created_at=old),
        message("postgres untouched", message_id="9203", created_at=old),
    ]
    now = ago(seconds=0)
    racing = [
        MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("9201",)),
        MessageEdited(
            guild_id="g1", message_id="9202", channel_id="c1", text="new words", edited_at=now
        ),
    ]
    kernel.history.register("fake", RacingHistory(page, kernel, racing))
    await sync(kernel)
    await finish(kernel)
    stored = await dump_text(kernel)
    assert "canarydeletedqf" not in stored and "canaryeditedawayqc" not in stored
    assert await count(kernel, text="postgres") == 1
    assert await marks(kernel) == {"9201": "deleted", "9202": "edited"}
    [row] = (await call(kernel, "status"))["syncs"]
    assert (row["imported"], row["skipped"]) == (1, 2)
    # Seconds later a sync reads Discord as it is now: the edited text comes in, the deleted
    # never (the edit's time is moved back rather than the test waiting out the clock margin).
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.text("UPDATE memory_tombstones SET at_ms = at_ms - 10000"))
    later = [message("new words postgres", message_id="9202", created_at=old), page[2]]
    kernel.history.register("fake", FakeHistory(later))
    await sync(kernel)
    await finish(kernel)
    assert await count(kernel, text="new words") == 1
    assert "canarydeletedqf" not in await dump_text(kernel)


async def test_the_writer_honours_a_mark_queued_just_before_the_copy(kernel) -> None:
    """The sync's own check ran before the delete: the writer checks again, in order."""
    await enable(kernel, "c1")
    svc = service_of(kernel)
    copy = message("canaryqueuedafterdelete", message_id="9301", created_at=ago(days=1))
    gate = svc.cache.gate(
        guild_id="g1",
        channel_id="c1",
        parent_id=None,
        kind="text",
        is_bot=False,
        created_ms=now_ms() - DAY_MS,
        live=False,
    )
    op = create_op(copy, gate)
    op.data["copy_ms"] = now_ms() - 60_000  # read a minute ago
    svc.writer.enqueue(Op("delete", "g1", {"channel_id": "c1", "message_ids": ("9301",)}))
    svc.writer.enqueue(op)
    await publish(kernel)
    assert "canaryqueuedafterdelete" not in await dump_text(kernel)
    assert await rows(kernel, "SELECT id FROM memory_messages WHERE message_id = '9301'") == []


async def test_an_import_honours_marks_and_keeps_copies_that_carry_the_edit(kernel) -> None:
    await enable(kernel, days=30)
    edited_at = ago(hours=1)
    await publish(
        kernel,
        MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("401",)),
        MessageEdited(
            guild_id="g1", message_id="402", channel_id="c1", text="x", edited_at=edited_at
        ),
        MessageEdited(
            guild_id="g1", message_id="403", channel_id="c1", text="x", edited_at=edited_at
        ),
        MessageEdited(
            guild_id="g1", message_id="404", channel_id="c1", withheld=True, edited_at=edited_at
        ),
    )
    data = parse_export(
        export(
            msg("401", "canarydeletedimport", days_ago=2),
            msg("402", "canaryoldcopy", days_ago=2),  # exported before the edit
            msg("403", "postgres edited copy", days_ago=2, timestampEdited=edited_at.isoformat()),
            msg("404", "canarypausededit", days_ago=2, timestampEdited=ago().isoformat()),
        )
    )
    report = await run_import(kernel, data, guild_id="g1")
    assert report.imported == 1
    assert report.skipped == {
        "deleted since": 1,
        "edited after this copy was read": 1,
        "edited while the channel was paused or secure": 1,
    }
    stored = await dump_text(kernel)
    assert "canary" not in stored
    assert await count(kernel, text="postgres") == 1


async def test_no_mark_outside_remembered_channels_and_marks_expire(kernel) -> None:
    await enable(kernel, "c1", days=7)
    await publish(
        kernel,
        MessageDeleted(guild_id="g1", channel_id="c2", message_ids=("501",)),  # c2 is off
        MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("502",)),
        MessageEdited(guild_id="g1", message_id="503", channel_id="c1", edited_at=ago()),
        MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("503",)),  # stronger
        MessageEdited(guild_id="g1", message_id="503", channel_id="c1", edited_at=ago()),
    )
    assert await marks(kernel) == {"502": "deleted", "503": "deleted"}
    [until] = await rows(kernel, "SELECT until_ms FROM memory_tombstones WHERE message_id='502'")
    assert (
        abs(until.until_ms - (now_ms() + 7 * DAY_MS)) < timedelta(minutes=1).total_seconds() * 1e3
    )
    svc = service_of(kernel)
    await svc.store.purge_expired(now=now_ms() + 6 * DAY_MS)
    assert len(await marks(kernel)) == 2
    await svc.store.purge_expired(now=now_ms() + 8 * DAY_MS)
    assert await marks(kernel) == {}


async def test_a_deleted_channel_takes_its_marks(kernel) -> None:
    from gigi_core.events import ChannelDeleted

    await enable(kernel, "c1")
    await enable(kernel, "c3")
    await publish(
        kernel,
        MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("601",)),
        MessageDeleted(guild_id="g1", channel_id="c3", message_ids=("602",)),
        ChannelDeleted(guild_id="g1", channel_id="c1"),
    )
    assert await marks(kernel) == {"602": "deleted"}
