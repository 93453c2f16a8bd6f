"""Change notices between processes on one PostgreSQL: a grant, a pause or a secure made by
one kernel (the CLI) reaches another (the bot) at once instead of after its cache TTL."""

from __future__ import annotations

import asyncio
import json

import pytest

from gigi_core import Actor
from gigi_core.errors import PolicyDenied
from gigi_core.events import ChannelSecured
from gigi_core.store.changes import Change, ChangeFeed
from gigi_core.testing import open_test_kernel
from tests.conftest import _fresh_postgres_database
from tests.test_events import Observer, message
from tests.toolbox import Toolbox

MEMBER = Actor(id="u1")


@pytest.fixture
def shared_url(postgres_server) -> str:
    return _fresh_postgres_database(postgres_server)


async def _eventually(check, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the other process never saw the change")


async def test_another_processes_grant_and_pause_apply_at_once(
    tmp_path, shared_url, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_POLICY_CACHE_SECONDS", "600")  # only a notice can clear them
    monkeypatch.setenv("GIGI_EVENT_FACTS_SECONDS", "600")
    seer, box = Observer("seer", tmp_path), Toolbox(tmp_path)
    bot_home, cli_home = tmp_path / "bot", tmp_path / "cli"
    bot_home.mkdir()
    cli_home.mkdir()
    async with (
        open_test_kernel(
            bot_home, extra_plugins=[("seer", seer), ("box", box)], database_url=shared_url
        ) as bot,
        open_test_kernel(
            cli_home, extra_plugins=[("box", Toolbox(cli_home))], database_url=shared_url
        ) as cli,
    ):
        await bot.enable_plugin("g1", "seer")
        await bot.enable_plugin("g1", "box")
        await bot.changes.listen()
        await asyncio.wait_for(bot.changes.listening.wait(), 10)
        with pytest.raises(PolicyDenied):  # cached: u1 holds no box.admin
            await bot.call_tool("box.secret_op", {}, actor=MEMBER, guild_id="g1")
        await cli.grants.add("g1", "box.admin", "user", "u1", by="admin")

        async def granted() -> bool:
            try:
                await bot.call_tool("box.secret_op", {}, actor=MEMBER, guild_id="g1")
            except PolicyDenied:
                return False
            return True

        await _eventually(granted)

        await bot.publish(message(text="before"))
        await bot.events.drain()
        assert [e.text for e in seer.seen] == ["before"]
        await cli.set_channel_state("g1", "c1", "secure", by="admin")

        async def secured() -> bool:
            await bot.events.drain()
            return ChannelSecured(guild_id="g1", channel_id="c1", by="admin") in seer.seen

        await _eventually(secured)
        await bot.publish(message(text="after"))  # the bot's cached facts were cleared
        await bot.events.drain()
        assert "after" not in [getattr(e, "text", None) for e in seer.seen]


async def test_a_notice_of_its_own_or_a_malformed_one_is_ignored(tmp_path, shared_url) -> None:
    async with open_test_kernel(tmp_path, database_url=shared_url) as kernel:
        seen: list[Change] = []
        kernel.changes.subscribe("facts", seen.append)
        kernel.changes._receive(json.dumps({"o": kernel.changes.origin, "t": "facts"}))
        kernel.changes._receive("not json")
        kernel.changes._receive('{"o": "other"}')
        assert seen == []
        kernel.changes._receive('{"o": "other", "t": "facts", "g": "g1", "d": {}}')
        assert seen == [Change("facts", "g1", {})]


async def test_sqlite_has_no_one_to_tell(tmp_path) -> None:
    async with open_test_kernel(tmp_path) as kernel:
        feed: ChangeFeed = kernel.changes
        assert not feed.shared
        feed.tell(Change("facts"))
        await feed.listen()
        assert not feed.listening.is_set() and not feed._sending


async def test_a_credential_revoked_by_another_process_is_dropped_at_once(
    tmp_path, shared_url, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_LLM_CACHE_SECONDS", "600")  # only the notice can clear it
    (tmp_path / "bot").mkdir()
    (tmp_path / "cli").mkdir()
    async with (
        open_test_kernel(tmp_path / "bot", plugins=["openai"], database_url=shared_url) as bot,
        open_test_kernel(tmp_path / "cli", plugins=["openai"], database_url=shared_url) as cli,
    ):
        await bot.changes.listen()
        await asyncio.wait_for(bot.changes.listening.wait(), 10)
        cred = await cli.llm.add_credential("tenant", "openai", "main", "sk-test-0123456789abcd")
        before = bot.llm.cache.epoch(cred.id)
        await cli.llm.revoke_credential("tenant", "main")

        async def retired() -> bool:
            return bot.llm.cache.epoch(cred.id) > before

        await _eventually(retired)
