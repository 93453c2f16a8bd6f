"""``gigi run --shards auto|N``: this process serves the shards it holds leases on.

The shard count is N, or with ``auto`` the count the pool's live processes use, else
Discord's recommendation. The process joins the pool (``gigi_core.surfaces.ShardLeases``),
connects discord.py's ``AutoShardedClient`` with the shards it was given, and beats: a
shard it gains (a process died, its lease expired) is launched in the running client; a
shard it lost (this process froze past its lease and another took it) stops the client,
so the process exits and its supervisor restarts it. With no shard to hold the process
stands by. Discord routes guild events by ``(guild_id >> 22) % shard_count`` and DMs to
shard 0, so the holder of shard 0 serves DMs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from gigi_core import GigiError
from gigi_core.surfaces import ShardLeases

log = logging.getLogger(__name__)


class ShardLost(GigiError):
    """Another process holds a shard this one served: stop, and let a supervisor restart."""

    exit_code = 75  # EX_TEMPFAIL: run again


async def shard_count_for(bot: Any, kernel: Any, wanted: int | None) -> int:
    """N, else what the pool's live processes use, else Discord's recommendation."""
    if wanted:
        return wanted
    probe = ShardLeases(kernel.db, 1)
    live = await probe.pool_count()
    if live:
        return int(live)
    recommended, _, _ = await bot.http.get_bot_gateway()
    return int(recommended)


async def launch(bot: Any, shard_id: int) -> None:
    """Start one more shard in a running ``AutoShardedClient`` (discord.py's own launcher)."""
    from discord.gateway import DiscordWebSocket

    if shard_id not in bot.shard_ids:
        bot.shard_ids.append(shard_id)  # the connection state reads this same list
    await bot.launch_shard(DiscordWebSocket.DEFAULT_GATEWAY, shard_id)


class ShardSupervisor:
    """Holds this process's shard leases while ``bot`` (not yet connected) runs on them."""

    def __init__(self, kernel: Any, bot: Any, leases: ShardLeases) -> None:
        self.kernel = kernel
        self.bot = bot
        self.leases = leases
        self._beating: asyncio.Task[None] | None = None
        self.lost: tuple[int, ...] = ()

    async def first_shards(self) -> tuple[int, ...]:
        """Join the pool; stand by (beating) until at least one shard is this process's."""
        beat = await self.leases.join()
        while not beat.held:
            log.info(
                "standing by: all %d shards are held by %d other process(es)",
                self.leases.shard_count,
                beat.members - 1,
            )
            await asyncio.sleep(self.leases.every)
            beat = await self.leases.beat()
        return beat.held

    async def connect(self) -> None:
        """Connect the bot on the held shards and keep their leases until it stops."""
        held = await self.first_shards()
        self.bot.shard_ids = list(held)
        self.bot.shard_count = self.leases.shard_count
        log.info("serving shards %s of %d", list(held), self.leases.shard_count)
        self._beating = asyncio.get_running_loop().create_task(self._beat())
        try:
            await self.bot.connect()
        finally:
            self._beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beating
        if self.lost:
            raise ShardLost(
                f"shard(s) {list(self.lost)} were taken over by another process after this "
                "one missed its lease; restart this process",
                hint="a process that froze (or lost the database) longer than "
                "GIGI_SHARD_LEASE_SECONDS loses its shards; its supervisor should restart it",
            )

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.leases.every)
            try:
                beat = await self.leases.beat()
            except Exception:  # the database is away: keep serving, try again next beat
                log.warning("could not renew shard leases; retrying", exc_info=True)
                continue
            if beat.lost:
                self.lost = beat.lost
                await self.bot.close()
                return
            for shard_id in beat.gained:
                log.info("took over shard %d", shard_id)
                await launch(self.bot, shard_id)

    async def release(self) -> None:
        """A clean stop hands the shards back at once instead of after their lease."""
        with contextlib.suppress(Exception):
            await self.leases.release()
