"""LLM budgets (issue 30): every call through ``kernel.llm`` holds its most cost on the
budgets covering it before the provider is called and settles after; a full budget refuses
with what, how much and when it resets. Both backends; a fake OpenAI on loopback."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from gigi_core import Actor
from gigi_core.llm import BudgetExhausted
from gigi_core.llm.budgets import next_start, window_start
from gigi_core.llm.records import LlmConfigError
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, HI, MOST, configure, counters, request, usage_of
from tests.llm.service_helpers import llm_kernel

MEMBER = Actor(id="u1", roles=frozenset({"r-members"}))


async def chat(kernel, actor=MEMBER, channel: str | None = "c1"):
    return await kernel.llm.chat(request(), guild_id=GUILD, actor=actor, channel_id=channel)


async def test_200_concurrent_calls_spend_only_the_room_for_10(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=10 * MOST, window="daily")
        # each reply spends exactly what it held: whatever the timing, 10 calls fit
        fake.reply_text("ok", usage=usage_of(MOST), times=200)
        results = await asyncio.gather(*(chat(kernel) for _ in range(200)), return_exceptions=True)
        ok = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, BudgetExhausted)]
        assert (len(ok), len(refused)) == (10, 190), [
            type(r).__name__ for r in results if isinstance(r, BaseException)
        ][:3]
        assert len(fake.requests_to("chat")) == 10  # a refused call never reaches the provider
        assert await counters(kernel) == (10 * MOST, 0)
        events = await kernel.llm.usage_log.events(GUILD, limit=500)
        assert len(events) == 10  # refusals are no provider calls: no usage rows


async def test_the_refusal_names_the_budget_its_window_and_when_it_resets(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        now = datetime(2026, 3, 4, 10, 30, tzinfo=UTC)
        kernel.llm.budgets.clock = now.timestamp
        await kernel.llm.set_budget(
            GUILD, "member", "u1", limit=MOST + 5, window="daily", reset_hour=6
        )
        fake.reply_text("ok", usage=usage_of(MOST))
        await chat(kernel)
        with pytest.raises(BudgetExhausted) as info:
            await chat(kernel)
        text = str(info.value)
        assert "member u1 daily budget of" in text and f"{MOST + 5} tokens" in text
        assert "5 tokens are left" in text and f"up to {MOST}" in text
        assert "resets at 2026-03-05 06:00 UTC" in text
        assert "gigi llm budget set|reset --guild g1 --member u1 --window daily" in text
        # a call that can never fit says so, and what to change
        await kernel.llm.set_budget(GUILD, "member", "u1", limit=MOST - 1, window="daily")
        with pytest.raises(BudgetExhausted, match="smaller than this one call may cost"):
            await chat(kernel)


async def test_a_new_window_has_room_again(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        clock = [datetime(2026, 3, 4, 5, 59, tzinfo=UTC).timestamp()]
        kernel.llm.budgets.clock = lambda: clock[0]
        await kernel.llm.set_budget(GUILD, "guild", None, limit=MOST, reset_hour=6)
        fake.reply_text("ok", usage=usage_of(MOST), times=3)
        await chat(kernel)
        with pytest.raises(BudgetExhausted, match="resets at 2026-03-04 06:00 UTC"):
            await chat(kernel)
        clock[0] += 60  # 06:00: the next daily window
        await chat(kernel)
        with pytest.raises(BudgetExhausted, match="resets at 2026-03-05 06:00 UTC"):
            await chat(kernel)


async def test_admins_and_exempt_roles_skip_a_budget_others_meet(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=0, exempt_roles=["r-staff"])
        fake.reply_text("ok", usage=usage_of(MOST), times=2)
        with pytest.raises(BudgetExhausted):
            await chat(kernel)
        await chat(kernel, actor=Actor(id="a1", is_admin=True))
        await chat(kernel, actor=Actor(id="s1", roles=frozenset({"r-staff"})))
        # admins can be held too, when the budget says so
        await kernel.llm.set_budget(GUILD, "guild", None, limit=0, exempt_admins=False)
        with pytest.raises(BudgetExhausted):
            await chat(kernel, actor=Actor(id="a1", is_admin=True))
        assert len(fake.requests_to("chat")) == 2


async def test_role_channel_model_and_every_member_budgets(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        fake.reply_text("ok", usage=usage_of(MOST), times=20)
        llm = kernel.llm
        # every member has their own room for one call
        await llm.set_budget(GUILD, "member", "*", limit=MOST)
        await chat(kernel, actor=Actor(id="u1"))
        await chat(kernel, actor=Actor(id="u2"))
        with pytest.raises(BudgetExhausted, match="per-member daily budget"):
            await chat(kernel, actor=Actor(id="u1"))
        await llm.remove_budget(GUILD, "member", "*", "daily")
        # a role's budget is shared by the members who hold the role, and only by them
        await llm.set_budget(GUILD, "role", "r-1", limit=MOST, window="weekly")
        await chat(kernel, actor=Actor(id="u1", roles=frozenset({"r-1"})))
        with pytest.raises(BudgetExhausted, match="role r-1 weekly budget"):
            await chat(kernel, actor=Actor(id="u2", roles=frozenset({"r-1"})))
        await chat(kernel, actor=Actor(id="u3"))
        # a channel's, in that channel only
        await llm.set_budget(GUILD, "channel", "c9", limit=0, window="monthly")
        with pytest.raises(BudgetExhausted, match="channel c9 monthly budget"):
            await chat(kernel, actor=Actor(id="u4"), channel="c9")
        await chat(kernel, actor=Actor(id="u4"), channel="c1")
        # a provider's (or provider/model's), for calls to it
        await llm.set_budget(GUILD, "model", "openai-compatible/m-2", limit=0)
        await chat(kernel, actor=Actor(id="u5"))
        await llm.set_budget(GUILD, "model", "openai-compatible/m-1", limit=0)
        with pytest.raises(BudgetExhausted, match="model openai-compatible/m-1"):
            await chat(kernel, actor=Actor(id="u5"))


async def test_all_or_nothing_a_full_budget_gives_back_the_holds_taken(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        await llm.set_budget(GUILD, "guild", None, limit=100 * MOST)
        await llm.set_budget(GUILD, "channel", "c1", limit=100 * MOST)
        await llm.set_budget(GUILD, "member", "u1", limit=0)
        with pytest.raises(BudgetExhausted, match="member u1"):
            await chat(kernel)
        assert await counters(kernel) == (0, 0)  # nothing held on the guild or channel


async def test_a_failed_call_releases_its_hold(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=MOST)
        fake.reply_error(400, "bad request")
        with pytest.raises(Exception, match="bad request"):
            await chat(kernel)
        assert await counters(kernel) == (0, 0)
        fake.reply_text("ok", usage=usage_of(7))
        await chat(kernel)  # the whole budget was free again
        assert await counters(kernel) == (7, 0)


async def test_a_cancelled_call_releases_its_hold(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=MOST)
        fake.reply_text("late", usage=usage_of(MOST), delay=5.0)
        task = asyncio.create_task(chat(kernel))
        for _ in range(500):
            if fake.requests_to("chat"):
                break
            await asyncio.sleep(0.01)
        assert await counters(kernel) == (0, MOST)  # held while the call runs
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await counters(kernel) == (0, 0)


async def test_a_budgeted_call_gets_an_output_cap(database_url, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_LLM_BUDGET_OUTPUT_TOKENS", "300")
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        fake.reply_text("ok", times=2)
        await kernel.llm.chat(HI, guild_id=GUILD, actor=MEMBER)
        assert not {"max_tokens", "max_completion_tokens"} & set(fake.last_request.json)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=10_000)
        await kernel.llm.chat(HI, guild_id=GUILD, actor=MEMBER)
        sent = fake.last_request.json
        assert 300 in (sent.get("max_tokens"), sent.get("max_completion_tokens"))


async def test_status_reset_remove_and_what_a_bad_budget_is_told(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        await llm.set_budget(GUILD, "guild", None, limit=MOST, by="admin")
        fake.reply_text("ok", usage=usage_of(MOST), times=2)
        await chat(kernel)
        [status] = await llm.budget_status(GUILD)
        assert (status.spent, status.reserved, status.left) == (MOST, 0, 0)
        assert await llm.reset_budget(GUILD, "guild", None, "daily") == 1
        await chat(kernel)  # room again after the reset
        await llm.remove_budget(GUILD, "guild", None, "daily")
        assert await llm.budget_status(GUILD) == []
        with pytest.raises(LlmConfigError, match="has no daily budget for guild"):
            await llm.remove_budget(GUILD, "guild", None, "daily")
        with pytest.raises(
            LlmConfigError,
            match="money budget needs prices on every profile it covers; guild:g1.s chat profile",
        ):
            await llm.set_budget(GUILD, "guild", None, limit=5, unit="money")
        with pytest.raises(LlmConfigError, match="needs an id"):
            await llm.set_budget(GUILD, "role", None, limit=5)
        with pytest.raises(LlmConfigError, match="use one of daily, weekly, monthly"):
            await llm.set_budget(GUILD, "guild", None, limit=5, window="hourly")


def test_windows_start_at_the_reset_hour() -> None:
    at = datetime(2026, 3, 4, 5, 0, tzinfo=UTC)  # a Wednesday
    assert window_start("daily", 6, at) == datetime(2026, 3, 3, 6, tzinfo=UTC)
    assert window_start("daily", 0, at) == datetime(2026, 3, 4, tzinfo=UTC)
    assert window_start("weekly", 0, at) == datetime(2026, 3, 2, tzinfo=UTC)
    monday_early = datetime(2026, 3, 2, 3, tzinfo=UTC)
    assert window_start("weekly", 6, monday_early) == datetime(2026, 2, 23, 6, tzinfo=UTC)
    assert window_start("monthly", 0, at) == datetime(2026, 3, 1, tzinfo=UTC)
    first_early = datetime(2026, 1, 1, 2, tzinfo=UTC)
    start = window_start("monthly", 6, first_early)
    assert start == datetime(2025, 12, 1, 6, tzinfo=UTC)
    assert next_start("monthly", start) == datetime(2026, 1, 1, 6, tzinfo=UTC)
    assert next_start("weekly", datetime(2026, 2, 23, 6, tzinfo=UTC)).day == 2


async def test_embeddings_hold_their_inputs_and_settle_what_was_reported(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_profile(f"guild:{GUILD}", "embedding", "main", "e-1")
        await kernel.llm.set_budget(GUILD, "channel", "c1", limit=10)
        texts = ["one", "two"]
        reply = await kernel.llm.embed(texts, guild_id=GUILD, actor=MEMBER, channel_id="c1")
        assert len(reply.vectors) == 2
        assert await counters(kernel) == (6, 0)  # the fake reports 3 tokens an input
        with pytest.raises(BudgetExhausted, match="channel c1 daily budget of 10 tokens"):
            await kernel.llm.embed(["x" * 60], guild_id=GUILD, actor=MEMBER, channel_id="c1")
        # calls for another channel (or none) do not meet it
        await kernel.llm.embed(["x" * 60], guild_id=GUILD, actor=MEMBER, channel_id="c2")


async def test_a_call_on_the_members_own_key_spends_no_guild_budget(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        await llm.set_policy(GUILD, personal_keys="guild-allowed")
        await llm.add_credential(
            "user:u1", "openai-compatible", "mine", "sk-user-0123456789", base_url=fake.base_url
        )
        await llm.set_profile("user:u1", "chat", "mine", "m-own")
        await llm.set_budget(GUILD, "guild", None, limit=0)
        fake.reply_text("ok", usage=usage_of(MOST))
        await llm.chat(request(), guild_id=GUILD, actor=MEMBER, billing="me")
        with pytest.raises(BudgetExhausted):
            await llm.chat(request(), guild_id=GUILD, actor=MEMBER, billing="server")
        assert await counters(kernel) == (0, 0)
