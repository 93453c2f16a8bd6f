"""The "discord" surface `gigi run` starts: one client, its shards, until interrupted."""

from __future__ import annotations

import logging
from typing import Any

import discord

from gigi_core import GigiError
from gigi_discord.settings import TOKEN_VAR, DiscordSettings

log = logging.getLogger(__name__)


class DiscordSurface:
    """``factory(kernel)`` for ``register_surfaces``; ``run()`` returns when the bot stops."""

    def __init__(self, kernel: Any, settings: DiscordSettings | None = None) -> None:
        self.kernel = kernel
        self.settings = settings or DiscordSettings.from_env()

    async def run(self) -> None:
        from gigi_discord import create_bot

        token = self.settings.token
        if not token:
            raise GigiError(
                f"{TOKEN_VAR} is not set, so Gigi cannot log in to Discord",
                hint="copy the bot token from the Discord developer portal (see docs/discord.md)",
            )
        bot = create_bot(self.kernel, settings=self.settings)
        try:
            async with bot:
                if self.settings.shards is None:
                    await bot.start(token)
                else:
                    await self._leased(bot, token)
        except discord.LoginFailure:
            raise GigiError(
                "Discord rejected the bot token",
                hint=f"reset it in the developer portal and update {TOKEN_VAR}",
            ) from None
        except discord.PrivilegedIntentsRequired:
            asked = [
                name
                for name, on in (
                    ("Message Content", self.settings.message_content),
                    ("Server Members", self.settings.members),
                )
                if on
            ]
            raise GigiError(
                f"Discord refused a privileged intent ({' and '.join(asked) or 'unknown'})",
                hint="enable it for the bot in the developer portal (Bot → Privileged Gateway "
                "Intents), or unset GIGI_DISCORD_MESSAGE_CONTENT / GIGI_DISCORD_MEMBERS",
            ) from None

    async def _leased(self, bot: Any, token: str) -> None:
        """Log in, then connect on the shards this process holds leases on (``shards``)."""
        from gigi_core.surfaces import ShardLeases
        from gigi_discord.shards import ShardSupervisor, shard_count_for

        await bot.login(token)
        count = await shard_count_for(bot, self.kernel, self.settings.shards)
        supervisor = ShardSupervisor(self.kernel, bot, ShardLeases(self.kernel.db, count))
        try:
            await supervisor.connect()
        finally:
            await supervisor.release()
