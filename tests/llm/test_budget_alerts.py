"""Soft budget alerts (issue 30): a settled call that takes a budget's window past 80, 95 or
100 % posts one staff notice per threshold per window, through the kernel outbox; many
calls crossing together, in one kernel or two on one database, post it once. Both backends."""

from __future__ import annotations

import asyncio
import re

from sqlalchemy import select

from gigi_core import Actor
from gigi_core.kernel import Kernel
from gigi_core.llm import BudgetExhausted
from gigi_core.store.budget_tables import LlmBudgetWindow
from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.outbox import RecordingPoster
from tests.llm.budget_helpers import GUILD, HI, MOST, configure, request, two_processes, usage_of
from tests.llm.service_helpers import llm_kernel

STAFF = "900"
MEMBER = Actor(id="u1")


async def chat(kernel: Kernel, actor: Actor = MEMBER, **kwargs):
    return await kernel.llm.chat(request(), guild_id=GUILD, actor=actor, channel_id="c1", **kwargs)


async def notices(kernel: Kernel, poster: RecordingPoster) -> list[str]:
    await kernel.db.writer.drain()
    await kernel.llm.caller.alerts.drain()
    return [p.text for p in poster.posts]


def percents(texts: list[str]) -> list[int]:
    return sorted(100 if "is used up" in t else int(t.split("has reached ")[1][:3]) for t in texts)


async def staffed(kernel: Kernel) -> RecordingPoster:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await kernel.configure_plugin(GUILD, "gigi", {"staff_channel": STAFF})
    return poster


async def test_each_threshold_is_announced_once_per_window(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        poster = await staffed(kernel)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=100 * MOST, window="daily")
        for share in (50, 30, 5):  # 50 %, 80 %, 85 %
            fake.reply_text("ok", usage=usage_of(share * MOST))
            await chat(kernel)
        texts = await notices(kernel, poster)
        assert percents(texts) == [80]
        post = poster.posts[0]
        assert (post.guild_id, post.channel_id) == (GUILD, STAFF)
        text = texts[0]
        assert f"server's daily budget has reached 80 % of its {100 * MOST} tokens" in text
        held = re.search(rf"\({80 * MOST} spent, (\d+) more held for calls under way\)", text)
        assert held, text  # held: this process's lease on the window, within the room left
        assert int(held[1]) <= 20 * MOST
        assert "the window resets at" in text and "gigi llm budget show --guild g1" in text
        assert HI[0]["content"] not in text.split("LLM budget alert: ")[1]  # no prompt text
        for share in (11, 4):  # 96 %, 100 %
            fake.reply_text("ok", usage=usage_of(share * MOST))
            await chat(kernel)
        # 100 % reads "is used up"; the two notices may be posted in either order
        assert percents(await notices(kernel, poster)) == [80, 95, 100]
        try:
            await chat(kernel)
        except BudgetExhausted:
            pass
        assert len(await notices(kernel, poster)) == 3  # a refusal settles nothing
        # a reset starts the thresholds over; one call jumping past several announces one
        await kernel.llm.reset_budget(GUILD, "guild", None, "daily")
        fake.reply_text("ok", usage=usage_of(97 * MOST))
        await chat(kernel)
        assert percents(await notices(kernel, poster)) == [80, 95, 95, 100]


async def test_many_concurrent_calls_crossing_a_threshold_post_one_notice(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        poster = await staffed(kernel)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=100 * MOST)
        fake.reply_text("ok", usage=usage_of(2 * MOST), times=60)
        for durability in ("step", "turn", "deferred"):  # 20 calls each: 120 % of the limit
            results = await asyncio.gather(
                *(chat(kernel, durability=durability) for _ in range(20)),
                return_exceptions=True,
            )
            failed = [r for r in results if isinstance(r, BaseException)]
            assert all(isinstance(r, BudgetExhausted) for r in failed), failed[:1]
        # never one threshold twice; settles combined into one transaction (turn) may jump
        # past 95 to 100 together, and then only the highest is announced
        got = percents(await notices(kernel, poster))
        assert len(got) == len(set(got)) and got[-1] == 100 and set(got) <= {80, 95, 100}, got


async def test_two_kernels_on_one_database_announce_each_threshold_once(
    database_url, tmp_path
) -> None:
    async with two_processes(database_url, tmp_path) as (one, two, fake):
        await configure(one, fake.base_url)
        posters = [await staffed(one), await staffed(two)]
        await one.llm.set_budget(GUILD, "guild", None, limit=100 * MOST)
        fake.reply_text("ok", usage=usage_of(2 * MOST), times=50)
        await asyncio.gather(*(chat(k) for _ in range(25) for k in (one, two)))
        texts = [t for k, p in zip((one, two), posters, strict=True) for t in await notices(k, p)]
        got = percents(texts)
        assert len(got) == len(set(got)) and got[-1] == 100 and set(got) <= {80, 95, 100}, texts


async def test_no_staff_channel_posts_nothing_and_claims_stay_once(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        poster = RecordingPoster()
        kernel.outbox.register("test", poster)
        await kernel.llm.set_budget(GUILD, "member", "*", limit=10 * MOST)
        fake.reply_text("ok", usage=usage_of(9 * MOST))
        await chat(kernel)
        assert await notices(kernel, poster) == []
        assert kernel.llm.caller.alerts.undelivered == 1
        async with kernel.db.session() as s:  # claimed on the member's own window row
            rows = (await s.execute(select(LlmBudgetWindow.subject, LlmBudgetWindow.alerted))).all()
        assert [tuple(r) for r in rows] == [("u1", 80)]
        # with the channel set, the next member's crossing is posted, naming only ids
        await kernel.configure_plugin(GUILD, "gigi", {"staff_channel": STAFF})
        fake.reply_text("ok", usage=usage_of(10 * MOST))
        await chat(kernel, actor=Actor(id="u2"))
        texts = await notices(kernel, poster)
        assert len(texts) == 1 and "member u2's (per-member) daily budget is used up" in texts[0]
