"""Channel budgets cover a channel's threads: a call's channel budgets are matched against
its place chain (thread, then its channel or forum), so a thread spends its channel's
allowance, an "every channel" budget counts a thread under its parent, and opening new
threads gives no fresh allowance. Both backends; a fake OpenAI on loopback."""

from __future__ import annotations

import pytest

from gigi_core import Actor
from gigi_core.llm import BudgetExhausted
from gigi_core.llm.channel_policy import Place
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, MOST, configure, usage_of
from tests.llm.budget_helpers import request as ask
from tests.llm.service_helpers import llm_kernel

BOB = Actor(id="u1")


async def chat(kernel, channel: str, places: tuple[Place, ...] = ()) -> None:
    await kernel.llm.chat(ask(), guild_id=GUILD, actor=BOB, channel_id=channel, places=places)


def in_thread(thread: str, parent: Place) -> tuple[Place, ...]:
    return (Place("thread", thread), parent, Place("category", "cat-1"))


async def test_threads_spend_their_channels_every_channel_allowance(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "channel", "*", limit=MOST)  # each channel: 1 call
        fake.reply_text("ok", usage=usage_of(MOST), times=5)
        c1 = Place("channel", "c1")
        await chat(kernel, "c1", (c1, Place("category", "cat-1")))
        for n in range(3):  # new threads under #c1: the channel's allowance is spent
            with pytest.raises(BudgetExhausted, match="per-channel daily budget"):
                await chat(kernel, f"t{n}", in_thread(f"t{n}", c1))
        # a forum's posts are threads too: the forum's allowance, one for all of them
        forum = Place("forum", "f1")
        await chat(kernel, "p1", in_thread("p1", forum))
        with pytest.raises(BudgetExhausted):
            await chat(kernel, "p2", in_thread("p2", forum))
        assert len(fake.requests) == 2
        [status] = await kernel.llm.budget_status(GUILD)
        assert (status.spent, status.subjects) == (2 * MOST, 2)
        # /quota in a thread shows the channel's allowance
        [allowance] = await kernel.llm.quota(GUILD, BOB, "t9", in_thread("t9", c1))
        assert allowance.left == 0
        [allowance] = await kernel.llm.quota(GUILD, BOB, "c2", (Place("channel", "c2"),))
        assert allowance.left == MOST


async def test_a_named_channel_budget_covers_its_threads(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "channel", "c1", limit=2 * MOST)
        fake.reply_text("ok", usage=usage_of(MOST), times=5)
        c1 = Place("channel", "c1")
        await chat(kernel, "t1", in_thread("t1", c1))
        await chat(kernel, "t2", in_thread("t2", c1))
        with pytest.raises(BudgetExhausted, match="c1"):
            await chat(kernel, "c1", (c1,))
        # another channel's threads are not covered by it
        await chat(kernel, "t3", in_thread("t3", Place("channel", "c2")))
        assert len(fake.requests) == 3
