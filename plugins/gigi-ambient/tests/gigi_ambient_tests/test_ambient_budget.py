"""The daily token budget is held when each call is made (issue 28, item 5): the most a
call may cost is reserved atomically before it, settled with the real usage after, and
released when it fails, so a burst of concurrent triggers — in one process or in several on
one database — never spends past the budget. Both backends."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import sqlalchemy as sa
from gigi_ambient import prompt
from gigi_ambient.budget import most_of_run
from gigi_ambient.envelope import SCHEMA
from gigi_ambient.store import AmbientStore
from sqlalchemy.ext.asyncio import create_async_engine

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


async def test_reservations_from_two_processes_never_exceed_the_budget(
    tmp_path, database_url
) -> None:
    async with open_world(tmp_path, database_url) as w:
        url = w.kernel.db.url
        other = create_async_engine(url, connect_args={"timeout": 30} if "sqlite" in url else {})
        try:
            stores = [AmbientStore(w.kernel.db.engine), AmbientStore(other)]
            asks = [stores[n % 2].reserve(GUILD, "2026-07-13", 7, 100) for n in range(40)]
            granted = await asyncio.gather(*asks)
            assert sum(granted) == 100 // 7  # 14 holds fit, whichever engine asked
            for n in range(sum(granted)):
                await stores[n % 2].settle(GUILD, "2026-07-13", 7, 5)
            day = await stores[1].day(GUILD, "2026-07-13")
            assert day["tokens"] == 14 * 5
            assert await stores[0].reserve(GUILD, "2026-07-13", 30, 100)  # 70 + 30 fits
            assert not await stores[1].reserve(GUILD, "2026-07-13", 1, 100)
        finally:
            await other.dispose()
