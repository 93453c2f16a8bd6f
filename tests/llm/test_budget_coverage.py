"""Who a budget covers when a call names no member or no channel (issue 30): background
work (ambient replies, knowledge and memory upkeep, follow-ups) counts against the server's
and model budgets, and against an "every member" / "every channel" budget as one more
member or channel ("-"); budgets naming one member, channel or role do not cover it. Both
backends; a fake OpenAI on loopback."""

from __future__ import annotations

import pytest

from gigi_core import Actor
from gigi_core.llm import BudgetExhausted
from gigi_core.llm.budgets import NOBODY
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, MOST, configure, counters, request, usage_of
from tests.llm.service_helpers import llm_kernel

U1 = Actor(id="u1", roles=frozenset({"r-1"}))


async def chat(kernel, actor=None, channel=None):
    return await kernel.llm.chat(request(), guild_id=GUILD, actor=actor, channel_id=channel)


async def test_calls_with_no_member_share_one_allowance_of_an_every_member_budget(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        fake.reply_text("ok", usage=usage_of(MOST), times=10)
        await kernel.llm.set_budget(GUILD, "member", "*", limit=MOST)
        await chat(kernel, channel="c1")  # background work in a channel
        with pytest.raises(BudgetExhausted, match="per-member daily budget"):
            await chat(kernel)  # and with no channel: the same "no member" allowance
        await chat(kernel, actor=U1)  # a member's own allowance is untouched
        status = await kernel.llm.budget_status(GUILD)
        assert (status[0].spent, status[0].subjects) == (2 * MOST, 2)
        # /quota shows a member their own allowance, never the background share
        [allowance] = await kernel.llm.quota(GUILD, Actor(id="u2"))
        assert allowance.left == MOST


async def test_calls_for_no_channel_share_one_allowance_of_an_every_channel_budget(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        fake.reply_text("ok", usage=usage_of(MOST), times=10)
        await kernel.llm.set_budget(GUILD, "channel", "*", limit=MOST)
        await chat(kernel, actor=U1)
        with pytest.raises(BudgetExhausted, match="per-channel daily budget"):
            await chat(kernel)
        await chat(kernel, actor=U1, channel="c1")


async def test_named_member_channel_and_role_budgets_do_not_cover_background_calls(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        fake.reply_text("ok", usage=usage_of(MOST), times=10)
        llm = kernel.llm
        await llm.set_budget(GUILD, "member", "u1", limit=0)
        await llm.set_budget(GUILD, "channel", "c1", limit=0)
        await llm.set_budget(GUILD, "role", "r-1", limit=0)
        await chat(kernel)
        await chat(kernel, channel="c2")
        with pytest.raises(BudgetExhausted, match="budget of 0 tokens"):
            await chat(kernel, actor=U1, channel="c2")
        # the server's budget covers every call, background work included
        await llm.set_budget(GUILD, "guild", None, limit=3 * MOST)
        for channel in (None, "c2", None):
            await chat(kernel, channel=channel)
        with pytest.raises(BudgetExhausted, match="server's daily budget"):
            await chat(kernel)
        assert await counters(kernel) == (3 * MOST, 0)


async def test_background_embeddings_count_against_the_server_and_no_member_share(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_profile(f"guild:{GUILD}", "embedding", "main", "e-1")
        await kernel.llm.set_budget(GUILD, "member", "*", limit=6)
        await kernel.llm.embed(["one", "two"], guild_id=GUILD, actor=None, billing="server")
        with pytest.raises(BudgetExhausted, match="per-member"):
            await kernel.llm.embed(["three"], guild_id=GUILD, actor=None, billing="server")
        [status] = await kernel.llm.budget_status(GUILD)
        assert status.spent == 6 and NOBODY == "-"


def test_the_staff_notice_names_the_no_member_share() -> None:
    from gigi_core.llm.budget_alerts import Alert, notice
    from gigi_core.llm.budgets import BudgetInfo

    budget = BudgetInfo("b1", GUILD, "member", "*", "tokens", 100, "daily", 0)
    text = notice(budget, Alert(GUILD, "b1", NOBODY, 0, 80, 80, 0, 100))
    assert "the per-member (calls with no member) daily budget has reached 80 %" in text
    text = notice(budget, Alert(GUILD, "b1", "u7", 0, 80, 80, 0, 100))
    assert "the member u7's (per-member) daily budget" in text


async def test_a_plugin_budget_covers_the_plugins_own_holds_and_nothing_else(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        fake.reply_text("ok", usage=usage_of(MOST), times=5)
        port = kernel.llm.plugin_budgets
        await port.ensure(GUILD, "ambient", 100)
        await port.ensure(GUILD, "ambient", 100)  # unchanged: no second write
        await kernel.llm.set_budget(GUILD, "member", "*", limit=0)
        async with port.spend(GUILD, "ambient", 60) as spend:  # member budgets: not its
            spend.used = 50
        with pytest.raises(BudgetExhausted, match="plugin ambient daily budget of 100"):
            async with port.spend(GUILD, "ambient", 60):
                pass
        await kernel.llm.remove_budget(GUILD, "member", "*", "daily")
        await chat(kernel, actor=U1)  # a spent plugin budget does not cover model calls
        await port.ensure(GUILD, "ambient", 0)  # 0: no budget
        statuses = await kernel.llm.budget_status(GUILD)
        assert statuses == []
