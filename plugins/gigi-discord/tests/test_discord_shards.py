"""``--shards``: two processes (two kernels on one database) split shard_count=2 through
shard leases; each bot, driven by SimCord, answers only guilds of its shard — Discord
routes by ``(guild_id >> 22) % shard_count`` — and DMs only on shard 0's holder. A held
shard whose process died is launched in the survivor's running client (a fake gateway at
discord.py's seam, ``DiscordWebSocket.from_client``); a lost shard stops the client."""

from __future__ import annotations

import asyncio
import time

import discord
import pytest
import simcord
from discord_world import make_bot
from gigi_discord import create_bot
from gigi_discord.settings import DiscordSettings
from gigi_discord.shards import ShardLost, ShardSupervisor

from gigi_core import ConfigError
from gigi_core.surfaces import ShardLeases
from gigi_core.testing import open_test_kernel, start_event_router
from gigi_core.testing.scripted import ScriptedModel, say


async def served(kernel, shards: tuple[int, ...], tmp_path) -> dict[str, bool]:
    """Run this process's bot on ``shards`` of 2; who got an answer where."""
    model = ScriptedModel([say("here") for _ in range(3)])
    bot = make_bot(kernel, model)
    bot.shard_ids, bot.shard_count = list(shards), 2
    await start_event_router(kernel)
    async with simcord.run(bot) as env:
        guilds = [env.create_guild(name=f"on shard {s}", shard_id=s) for s in (0, 1)]
        user = env.create_user("bob")
        answered = {}
        for shard, guild in enumerate(guilds):
            assert (guild.id >> 22) % 2 == shard
            channel = guild.create_text_channel("general")
            member = guild.add_member(user)
            await member.send(channel, f"<@{bot.user.id}> hello")
            answered[f"guild on shard {shard}"] = any(
                m.author.id == bot.user.id for m in channel.history()
            )
        await member.send_dm("hi")
        answered["dm"] = any(m.author.id == bot.user.id for m in user.dm_channel.history())
    return answered


async def test_two_processes_split_the_shards_and_discord_routes_by_them(
    database_url, tmp_path
) -> None:
    async with (
        open_test_kernel(tmp_path / "a", plugins=[], database_url=database_url) as a,
        open_test_kernel(tmp_path / "b", plugins=[], database_url=database_url) as b,
    ):
        joined = await asyncio.gather(
            ShardLeases(a.db, 2).join(settle=0.3), ShardLeases(b.db, 2).join(settle=0.3)
        )
        held = {joined[0].held, joined[1].held}
        assert held == {(0,), (1,)}
        for kernel, beat in zip((a, b), joined, strict=True):
            answered = await served(kernel, beat.held, tmp_path)
            mine = beat.held[0]
            assert answered == {
                "guild on shard 0": mine == 0,
                "guild on shard 1": mine == 1,
                "dm": mine == 0,  # DMs arrive on shard 0 only
            }


class FakeSocket:
    """A gateway connection that never receives anything (discord.py's ``ws`` seam)."""

    opened: list[int] = []

    def __init__(self, shard_id: int) -> None:
        self.shard_id = shard_id
        self.latency = 0.0
        self.closed = asyncio.Event()

    @classmethod
    async def from_client(cls, client, *, shard_id=None, **kwargs):
        cls.opened.append(shard_id)
        return cls(shard_id)

    async def poll_event(self) -> None:
        await self.closed.wait()
        raise asyncio.CancelledError

    async def close(self, code: int = 1000) -> None:
        self.closed.set()

    def is_ratelimited(self) -> bool:
        return False


@pytest.fixture
def fake_gateway(monkeypatch):
    FakeSocket.opened = []
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "from_client", FakeSocket.from_client)
    return FakeSocket


async def until(predicate, within: float) -> None:
    deadline = time.monotonic() + within
    while not await predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_the_survivor_launches_the_shard_of_a_process_that_died(
    database_url, tmp_path, fake_gateway
) -> None:
    lease = 0.9
    async with open_test_kernel(tmp_path, plugins=[], database_url=database_url) as kernel:
        dead = ShardLeases(kernel.db, 2, lease=lease)  # the other process: it dies at once
        mine = ShardLeases(kernel.db, 2, lease=lease)
        await asyncio.gather(dead.join(settle=0.2), mine.join(settle=0.2))
        bot = create_bot(kernel, shard_count=2, settings=DiscordSettings(sync_commands=False))
        supervisor = ShardSupervisor(kernel, bot, mine)
        async with bot:
            started = time.monotonic()
            running = asyncio.create_task(supervisor.connect())

            async def both() -> bool:
                return sorted(bot.shards) == [0, 1]

            await until(both, lease + 5)  # taken over once the dead one's lease ran out
            assert time.monotonic() - started >= lease * 0.8
            assert sorted(fake_gateway.opened) == [0, 1] and sorted(bot.shard_ids) == [0, 1]
            assert sorted(bot._connection.shard_ids) == [0, 1]  # what guilds are routed by
            assert mine.held == frozenset({0, 1})
            await bot.close()
            await asyncio.wait_for(running, 5)
        await supervisor.release()
        assert await ShardLeases(kernel.db, 2).table() == []


async def test_a_lost_shard_stops_the_client(database_url, tmp_path, fake_gateway) -> None:
    async with open_test_kernel(tmp_path, plugins=[], database_url=database_url) as kernel:
        mine = ShardLeases(kernel.db, 1, lease=0.6)
        bot = create_bot(kernel, shard_count=1, settings=DiscordSettings(sync_commands=False))
        supervisor = ShardSupervisor(kernel, bot, mine)
        async with bot:
            running = asyncio.create_task(supervisor.connect())

            async def connected() -> bool:
                return list(bot.shards) == [0]

            await until(connected, 5)
            # Another process took the shard (as after this one froze past its lease).
            from sqlalchemy import update

            from gigi_core.store.lease_tables import ShardLease

            async with kernel.db.engine.begin() as conn:
                await conn.execute(update(ShardLease).values(owner="elsewhere", lease_until=1e12))
            with pytest.raises(ShardLost, match="taken over by another process"):
                await asyncio.wait_for(running, 5)
            assert bot.is_closed()


def test_shard_settings(monkeypatch) -> None:
    monkeypatch.setenv("GIGI_DISCORD_SHARDS", "auto")
    assert DiscordSettings.from_env().shards == 0
    monkeypatch.setenv("GIGI_DISCORD_SHARDS", "4")
    assert DiscordSettings.from_env().shards == 4
    for bad in ("some", "0", "-1"):
        monkeypatch.setenv("GIGI_DISCORD_SHARDS", bad)
        with pytest.raises(ConfigError, match="GIGI_DISCORD_SHARDS"):
            DiscordSettings.from_env()
    monkeypatch.setenv("GIGI_DISCORD_SHARDS", "4")
    monkeypatch.setenv("GIGI_DISCORD_SHARD_COUNT", "4")
    monkeypatch.setenv("GIGI_DISCORD_SHARD_IDS", "0")
    with pytest.raises(ConfigError, match="exclude each other"):
        DiscordSettings.from_env()
