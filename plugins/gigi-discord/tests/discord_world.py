"""A simulated server: a kernel with the notes plugin, and the real bot inside SimCord.

Test modules import ``world`` and ``make_bot`` from here (never from ``conftest``: a module
of that name is every plugin's, so importing it breaks collecting several plugins at once).
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import discord
import simcord
from discord_notes_plugin import Notes
from gigi_discord import create_bot
from gigi_discord.settings import DiscordSettings

from gigi_core.testing import AgentRuntime, open_test_kernel, start_event_router
from gigi_core.testing.scripted import ScriptedModel


@dataclass
class World:
    """One simulated server: an admin, a member, a channel, and the bot in it."""

    env: simcord.Env
    kernel: Any
    notes: Notes
    bot: Any
    guild: Any
    channel: Any
    admin: Any
    member: Any
    model: ScriptedModel | None

    @property
    def gid(self) -> str:
        return str(self.guild.id)

    def bot_messages(self, channel: Any = None) -> list[discord.Message]:
        me = self.bot.user.id
        return [m for m in (channel or self.channel).history() if m.author.id == me]

    async def mention(self, who: Any, text: str, channel: Any = None) -> list[discord.Message]:
        """Send "@Gigi text" and return the bot's messages that followed."""
        before = len(self.bot_messages(channel))
        await who.send(channel or self.channel, f"<@{self.bot.user.id}> {text}")
        return self.bot_messages(channel)[before:]


def make_bot(
    kernel: Any, model: ScriptedModel | None, settings: DiscordSettings | None = None
) -> Any:
    runtime = AgentRuntime(kernel, model=model) if model is not None else None
    return create_bot(
        kernel, runtime=runtime, shard_count=1, settings=settings or DiscordSettings()
    )


@asynccontextmanager
async def world(
    tmp_path: pathlib.Path,
    turns: list[Any] | None = None,
    *,
    plugins: list[str] | None = None,
    enable: bool = True,
    setup: Callable[[Any], Any] | None = None,
    settings: DiscordSettings | None = None,
    extra: list[tuple[str, Any]] | None = None,
    database_url: str | None = None,
) -> AsyncIterator[World]:
    """``turns`` script the model; without them the kernel's real LLM path is used.

    ``extra`` adds in-process plugins (observers, command plugins); ``settings`` replaces
    the bot's defaults (e.g. ``DiscordSettings(message_content=True)``); ``database_url``
    picks the store (the ``database_url`` fixture: SQLite, then PostgreSQL).
    """
    notes = Notes(tmp_path)
    async with open_test_kernel(
        tmp_path,
        plugins=plugins or [],
        extra_plugins=[("notes", notes), *(extra or [])],
        database_url=database_url,
    ) as kernel:
        model = ScriptedModel(list(turns)) if turns is not None else None
        bot = make_bot(kernel, model, settings)
        await start_event_router(kernel)
        async with simcord.run(bot) as env:
            guild = env.create_guild(name="Test Server")
            channel = guild.create_text_channel("general")
            mods = guild.create_role("Mods", permissions=discord.Permissions(manage_guild=True))
            admin = guild.add_member(env.create_user("ada"), roles=[mods])
            member = guild.add_member(env.create_user("bob"))
            if enable:
                await kernel.enable_plugin(str(guild.id), "notes")
            yield World(env, kernel, notes, bot, guild, channel, admin, member, model)
            # Refusals and GigiErrors are answered on purpose; anything else is a bug.
            unexpected = [e for e in env.errors if not _answered_on_purpose(e)]
            assert unexpected == [], unexpected


def _answered_on_purpose(error: BaseException) -> bool:
    from discord import app_commands
    from gigi_discord.errors import Refusal

    from gigi_core import GigiError

    if isinstance(error, app_commands.CommandInvokeError):
        error = error.original
    return isinstance(error, GigiError | Refusal)
