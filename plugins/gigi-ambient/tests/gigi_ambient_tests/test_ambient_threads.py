"""A thread inherits its parent channel's observation state (issue 28, item 3, the ambient
side): a message already queued is not answered once its channel or the thread's parent
is paused or secure, and a thread's stored history goes when its parent is paused, as a paused channel's does."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, PERSONA, envelope, open_world
from gigi_ambient_tests.test_ambient_history_store import KEEP, MemoryKeeps, rows
from gigi_core.store.sealing import generate_key

THREAD = "300"


async def _in_thread(world, text: str, author: str = "7") -> str:
    return await world.publish(
        text, author=author, channel=THREAD, channel_kind="thread", parent_channel_id=HERE
    )


@pytest.mark.parametrize("quiet", ["parent", "thread"])
async def test_queued_messages_are_not_answered_once_the_channel_is_quiet(
    tmp_path, quiet: str
) -> None:
    async with open_world(tmp_path, None) as w:
        await w.svc.enable(GUILD, THREAD, PERSONA, "1")
        w.fake.reply_text(envelope(answer="first", answer_needed=True), delay=0.3)
        w.fake.reply_text(envelope(answer="second", answer_needed=True))
        await _in_thread(w, "one", author="42")
        await _in_thread(w, "two", author="42")  # queued behind the first
        await w.kernel.events.drain()
        await w.kernel.channels.set(GUILD, HERE if quiet == "parent" else THREAD, "paused")
        await w.settle()
        assert w.poster.posts == []  # the answer under way is not posted either
        assert len(w.fake.requests_to("chat")) <= 1  # the queued one made no call


async def test_a_threads_history_is_not_stored_while_its_parent_is_paused(
    tmp_path, database_url
) -> None:
    other = "400"
    memory = [("keeps", MemoryKeeps(channels=frozenset({THREAD, other})))]
    async with open_world(
        tmp_path, database_url, config=KEEP, extra=memory, secret_key=generate_key()
    ) as w:
        w.svc.clock = lambda: datetime.now(UTC)
        for channel in (THREAD, other):
            await w.svc.enable(GUILD, channel, PERSONA, "1")
        await _in_thread(w, "kept while the channel is observed")
        await w.settle()
        assert [r[0] for r in await rows(w.kernel)] == ["7"]
        await w.kernel.channels.set(GUILD, HERE, "paused")  # the thread's parent
        await w.say("elsewhere", channel=other, author="7")  # the next write of the history
        stored = await rows(w.kernel)
        assert len(stored) == 1  # only the other channel's message: the thread's went
