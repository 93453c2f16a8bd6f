"""The discord.py client: intents, commands, persistent buttons and background chores."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import discord
from discord import app_commands

from gigi_core.agent.contracts import ConfirmationPrompt
from gigi_discord.errors import describe, tell
from gigi_discord.settings import DiscordSettings
from gigi_discord.throttle import RunThrottle

log = logging.getLogger(__name__)


def make_intents(settings: DiscordSettings) -> discord.Intents:
    """Only what mentions, DMs and slash commands need; message content is opt-in.

    Guilds give the channel and role cache that permission checks use; without the
    privileged message-content intent Discord still sends the text of messages that
    mention the bot and of DMs.
    """
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = settings.message_content
    return intents


class GigiTree(app_commands.CommandTree["GigiBot"]):
    """One error handler for every command: an ephemeral sentence, never a traceback."""

    async def on_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        await tell(interaction, describe(error))


class GigiBot(discord.AutoShardedClient):
    """Gigi on Discord; ``kernel`` and ``runtime`` are what every handler works through."""

    def __init__(
        self,
        kernel: Any,
        *,
        runtime: Any = None,
        settings: DiscordSettings | None = None,
        shard_ids: list[int] | None = None,
        shard_count: int | None = None,
    ) -> None:
        self.settings = settings or DiscordSettings()
        self.throttle = RunThrottle(self.settings.runs_per_minute)
        ids = shard_ids if shard_ids is not None else self.settings.shard_ids
        count = shard_count if shard_count is not None else self.settings.shard_count
        super().__init__(
            intents=make_intents(self.settings),
            shard_ids=ids,
            shard_count=count,
            allowed_mentions=discord.AllowedMentions.none(),
        )
        self.kernel = kernel
        self._runtime = runtime
        self.tree = GigiTree(self)
        self.prompt_messages: dict[str, discord.Message] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._send_warned: dict[int, float] = {}
        from gigi_discord.commands import install

        install(self.tree)

    @property
    def runtime(self) -> Any:
        """The agent runtime; the kernel's own unless one was injected (tests, evals)."""
        return self._runtime if self._runtime is not None else self.kernel.agent

    async def setup_hook(self) -> None:
        from gigi_discord.confirm import DecisionButton

        self.add_dynamic_items(DecisionButton)
        if self.settings.sync_commands:
            await self.sync_commands()

    async def sync_commands(self) -> None:
        """Global sync by default; GIGI_DISCORD_SYNC_GUILDS syncs instantly to test servers."""
        for guild_id in self.settings.sync_guilds or []:
            guild = discord.Object(id=guild_id)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        await self.tree.sync()

    async def on_message(self, message: discord.Message) -> None:
        from gigi_discord.conversation import handle_message

        await handle_message(self, message)

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        """Log and carry on: one bad event must never take the bot down or loop."""
        log.exception("error in Discord event %s", event_method)

    # -- background chores ---------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Keep a reference so the task is not garbage-collected; log its failure."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task failed", exc_info=t.exception())

        task.add_done_callback(done)
        return task

    def schedule_expiry(self, message: discord.Message, prompt: ConfirmationPrompt) -> None:
        from gigi_discord.confirm import expire_later

        self.prompt_messages[prompt.confirmation_id] = message
        self.spawn(expire_later(self, message, prompt))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await super().close()
