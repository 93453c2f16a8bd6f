"""The daily token budget is held when each call is made, on the kernel's budgets (issue 30;
the kernel's two-process race test covers several processes): the most a call may cost is
reserved before it, settled with the real usage after, and released when it fails, so a
burst of concurrent triggers never spends past the budget. Both backends."""

from __future__ import annotations

import json
from types import SimpleNamespace

import sqlalchemy as sa
from gigi_ambient import prompt
from gigi_ambient.budget import most_of_run
from gigi_ambient.envelope import SCHEMA

from gigi_ambient_tests.ambient_helpers import GUILD, PERSONA, envelope, open_world

CHANNELS = [str(300 + n) for n in range(20)]
CONFIG = {"tool_rounds": 0, "answer_tokens": 10}
TEXT = "is anyone around to help?"


def _most(world) -> int:
    """What the responder reserves for one of the burst's messages (a channel's first)."""
    settings = SimpleNamespace(**CONFIG)  # the settings as the responder reads them
    system = prompt.system_message(PERSONA, world.svc.clock(), schema_in_prompt=False)
    text = prompt.user_turn("42", CHANNELS[0], TEXT, direct=False, reply_to=None)
    return most_of_run(settings, system, json.dumps(SCHEMA), text)


async def test_a_burst_of_concurrent_triggers_never_spends_past_the_budget(
    tmp_path, database_url
) -> None:
    async with open_world(tmp_path, database_url, config=CONFIG) as w:
        most = _most(w)
        budget = 3 * most + most // 2  # three calls' worth may be held at once
        await w.kernel.configure_plugin(GUILD, "ambient", {**CONFIG, "daily_token_budget": budget})
        for channel in CHANNELS:
            await w.svc.enable(GUILD, channel, PERSONA, "1")
        # Each call really costs nearly what it reserved; the replies take a while, so the
        # channels' workers all ask at once.
        usage = {"prompt_tokens": most - 11, "completion_tokens": 10, "total_tokens": most - 1}
        w.fake.reply_text(envelope(answer=None), usage=usage, delay=0.3, times=len(CHANNELS))
        for channel in CHANNELS:
            await w.publish(TEXT, channel=channel)
        await w.settle()
        today = await w.svc.today(GUILD)
        calls = len(w.fake.requests_to("chat"))
        assert today["tokens"] <= budget, (today, budget)
        assert 1 <= calls <= 3 and today["tokens"] == calls * (most - 1)
        assert today["calls"] == calls and today["skipped"] == len(CHANNELS) - calls
        async with w.kernel.db.engine.connect() as conn:
            held = await conn.scalar(sa.text("SELECT reserved FROM ambient_daily"))
        assert held == 0  # every reservation was settled


async def test_calls_stop_once_the_spend_leaves_no_room_for_the_next(
    tmp_path, database_url
) -> None:
    async with open_world(tmp_path, database_url, config=CONFIG) as w:
        most = _most(w)
        budget = most + 2 * 18 - 1  # the fake's calls cost 18 tokens each
        await w.kernel.configure_plugin(GUILD, "ambient", {**CONFIG, "daily_token_budget": budget})
        w.fake.reply_text(envelope(answer=None), times=3)
        for channel in CHANNELS[:3]:  # each its channel's first message: the same hold
            await w.svc.enable(GUILD, channel, PERSONA, "1")
            await w.say(TEXT, channel=channel)
        assert len(w.fake.requests_to("chat")) == 2  # 36 spent: the third does not fit
        today = await w.svc.today(GUILD)
        assert (today["tokens"], today["skipped"]) == (36, 1)


async def test_a_failed_call_releases_its_reservation(tmp_path, database_url) -> None:
    async with open_world(tmp_path, database_url, config=CONFIG) as w:
        most = _most(w)
        await w.kernel.configure_plugin(
            GUILD, "ambient", {**CONFIG, "daily_token_budget": most + 5}
        )
        w.fake.reply_error(400, "bad request", times=3)  # three failed attempts, one by one
        w.fake.reply_text(envelope(answer="Here I am", answer_needed=True))
        for channel in CHANNELS[:2]:  # each its channel's first message: the same hold
            await w.svc.enable(GUILD, channel, PERSONA, "1")
            await w.say(TEXT, channel=channel)
        assert w.answers() == ["Here I am"]  # the failures held nothing afterwards
        today = await w.svc.today(GUILD)
        assert today["failures"] == 1 and today["tokens"] == 18


async def test_the_daily_budget_is_a_kernel_budget_admins_can_read(tmp_path, database_url) -> None:
    """The setting becomes the kernel's ``plugin ambient`` budget: spend shows in
    `gigi llm budget show`, and a changed setting changes the limit."""
    async with open_world(tmp_path, database_url, config=CONFIG) as w:
        most = _most(w)
        await w.kernel.configure_plugin(
            GUILD, "ambient", {**CONFIG, "daily_token_budget": 5 * most}
        )
        w.fake.reply_text(envelope(answer=None), times=2)
        await w.svc.enable(GUILD, CHANNELS[0], PERSONA, "1")
        await w.say(TEXT, channel=CHANNELS[0])
        [status] = await w.kernel.llm.budget_status(GUILD)
        assert (status.budget.scope_kind, status.budget.scope_id) == ("plugin", "ambient")
        assert (status.budget.limit, status.spent, status.reserved) == (5 * most, 18, 0)
        await w.kernel.configure_plugin(
            GUILD, "ambient", {**CONFIG, "daily_token_budget": 6 * most}
        )
        await w.say(TEXT, channel=CHANNELS[0])
        [status] = await w.kernel.llm.budget_status(GUILD)
        assert (status.budget.limit, status.spent) == (6 * most, 36)


async def test_a_spent_server_budget_archives_the_message_without_retries(
    tmp_path, database_url
) -> None:
    """The persona's run meets the server's budgets too; a refusal is its own outcome
    (budget_exhausted: the message is archived, counted as skipped, not failed) and is not
    tried again."""
    async with open_world(tmp_path, database_url, config=CONFIG) as w:
        await w.kernel.llm.set_budget(GUILD, "guild", None, limit=0)
        w.fake.reply_text(envelope(answer="hi", answer_needed=True), times=3)
        await w.svc.enable(GUILD, CHANNELS[0], PERSONA, "1")
        await w.say(TEXT, channel=CHANNELS[0])
        assert w.fake.requests_to("chat") == [] and w.answers() == []
        today = await w.svc.today(GUILD)
        assert (today["skipped"], today["failures"], today["calls"]) == (1, 0, 0)
