"""The testing kit's ``start_event_router``: a bot under SimCord whose messages reach an
observer settles, without a test publishing a dummy event first."""

from __future__ import annotations

import asyncio

import simcord
from discord_watch_plugin import Watch
from discord_world import make_bot
from gigi_discord.settings import DiscordSettings

from gigi_core.testing import open_test_kernel, start_event_router
from gigi_core.testing.scripted import ScriptedModel


async def test_an_observed_message_settles_after_start_event_router(tmp_path) -> None:
    watch = Watch(tmp_path)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("watch", watch)]) as kernel:
        bot = make_bot(kernel, ScriptedModel([]), DiscordSettings(message_content=True))
        await start_event_router(kernel)
        # Without the router started here, SimCord waits forever for the router task the
        # first publish starts inside the bot's handler; the timeout turns that into a failure.
        async with asyncio.timeout(20), simcord.run(bot) as env:
            guild = env.create_guild(name="Test Server")
            channel = guild.create_text_channel("general")
            member = guild.add_member(env.create_user("bob"))
            await kernel.enable_plugin(str(guild.id), "watch")
            await member.send(channel, "hello there")
            await kernel.events.drain()
        assert [type(e).__name__ for e in watch.events] == ["MessageCreated"]
