"""The discord.py client: intents, commands, persistent buttons and background chores."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import discord
from discord import app_commands

from gigi_core.surfaces import ConfirmationPrompt
from gigi_discord.content_notice import ContentNotice
from gigi_discord.errors import describe, tell
from gigi_discord.events import Publisher
from gigi_discord.settings import DiscordSettings
from gigi_discord.throttle import RunThrottle

log = logging.getLogger(__name__)
IDENTIFY_SPACING = 5.0  # seconds between IDENTIFYs of one bucket (Discord's rule)


def make_intents(settings: DiscordSettings) -> discord.Intents:
    """Only what mentions, DMs, slash commands and published events need.

    Guilds give the channel and role cache that permission checks use, and channel, thread
    and guild join/leave events; guild and DM messages give creates, edits and deletes.
    Both privileged intents are opt-in: without message content Discord still sends the
    text of messages that mention the bot and of DMs; members adds member-left events and
    the member list that public answers' audiences are computed from.
    """
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.guild_reactions = True  # reaction clears (ReactionsCleared); not privileged
    intents.message_content = settings.message_content
    intents.members = settings.members
    return intents


class GigiTree(app_commands.CommandTree["GigiBot"]):
    """One error handler for every command: an ephemeral sentence, never a traceback."""

    async def on_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        await tell(interaction, describe(error))


class GigiBot(Publisher, discord.AutoShardedClient):
    """Gigi on Discord; ``kernel`` and ``runtime`` are what every handler works through.

    Gateway events are published to the kernel (``Publisher``) for plugins that observe
    them; mentions, DMs and commands are handled here.
    """

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
        self.throttle = RunThrottle(self.settings.runs_per_minute, kernel.limits)
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
        self.failures: dict[str, str] = {}  # run id -> what its provider said (admins' trace)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._send_warned: dict[int, float] = {}
        self._ready_once = False
        self._unregister_history: Any = None
        self._unregister_poster: Any = None
        self._max_concurrency: int | None = None
        from gigi_discord.followups import AnsweredMessages

        self.answered = AnsweredMessages()  # Gigi's reply message -> the run that wrote it
        self.content_notice = ContentNotice(self)
        from gigi_discord.prompts import PromptBook

        home = getattr(getattr(kernel, "settings", None), "home", None)
        self.prompts = PromptBook(home)  # public prompts on disk, refreshed at start-up
        from gigi_discord.commands import install

        install(self.tree, kernel)

    def dispatch(self, event_name: str, /, *args: Any, **kwargs: Any) -> None:
        """Every gateway event passes here: a role, channel or member change drops the cached
        audiences of public answers (``gigi_discord.audience``) before any handler runs."""
        from gigi_discord.audience import forget

        forget(event_name, args)
        super().dispatch(event_name, *args, **kwargs)

    @property
    def runtime(self) -> Any:
        """The agent runtime; the kernel's own unless one was injected (tests, evals)."""
        return self._runtime if self._runtime is not None else self.kernel.agent

    async def setup_hook(self) -> None:
        from gigi_discord.commands.llm_key import DisclosureButton
        from gigi_discord.commands.plugin_review import AcceptButton
        from gigi_discord.confirm import DecisionButton
        from gigi_discord.history import DiscordHistory
        from gigi_discord.outbox import DiscordPoster, OutboxButton

        self.add_dynamic_items(DecisionButton, OutboxButton, DisclosureButton, AcceptButton)
        self._unregister_history = self.kernel.history.register("discord", DiscordHistory(self))
        self._unregister_poster = self.kernel.outbox.register("discord", DiscordPoster(self))
        if self.settings.sync_commands:
            await self.sync_commands()

    async def sync_commands(self) -> bool:
        """Global sync by default; GIGI_DISCORD_SYNC_GUILDS syncs instantly to test servers.

        Skipped when the rendered commands hash to what was last synced for this
        application (GIGI_DISCORD_SYNC=force syncs anyway). Returns whether it synced.
        """
        from gigi_discord.sync import sync_if_changed

        return await sync_if_changed(self, force=self.settings.force_sync)

    async def on_ready(self) -> None:
        """Once per process: tell the operator which guilds miss the Message Content intent,
        and refresh the confirmation prompts an earlier process left (``prompts``)."""
        if not self._ready_once:
            self._ready_once = True
            self.spawn(self.content_notice.log_guilds(list(self.guilds)))
            from gigi_discord.prompts import refresh_prompts

            self.spawn(refresh_prompts(self))

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """One IDENTIFY per rate-limit bucket (``shard_id % max_concurrency``) every 5 s for
        the whole bot: processes sharing a PostgreSQL database take turns there, which
        discord.py leaves to the bot (its default only spaces one process's own shards)."""
        if self._max_concurrency is None:
            try:
                self._max_concurrency = (await self.fetch_session_start_limits()).max_concurrency
            except (discord.HTTPException, KeyError, TypeError):
                self._max_concurrency = 1
        bucket = (shard_id or 0) % max(1, self._max_concurrency)
        await self.kernel.limits.wait_turn(f"discord.identify.{bucket}", IDENTIFY_SPACING)

    async def on_message(self, message: discord.Message) -> None:
        """Publish first (it only queues the event), then answer if Gigi was addressed."""
        from gigi_discord.conversation import handle_message

        await self.publish_message(message)
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
        if not message.flags.ephemeral:  # an ephemeral prompt cannot be edited after a restart
            self.prompts.remember(prompt.confirmation_id, message.channel.id, message.id)
        self.spawn(expire_later(self, message, prompt))

    def forget_prompt(self, confirmation_id: str) -> None:
        """The prompt is closed: nothing to refresh for it at the next start."""
        self.prompt_messages.pop(confirmation_id, None)
        self.prompts.forget(confirmation_id)

    async def close(self) -> None:
        for unregister in (self._unregister_history, self._unregister_poster):
            if unregister is not None:
                unregister()
        for task in list(self._tasks):
            task.cancel()
        await super().close()
