"""Tell admins, once, when an enabled plugin needs message text the bot cannot read.

Plugins that observe messages (memory, knowledge) declare ``message_content`` in their
manifest's ``plugin.intents``. Without Discord's privileged Message Content intent they
only see messages addressed to Gigi, which silently makes them far less useful; an admin
cannot fix that from Discord, so the notice says exactly what the operator must turn on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

log = logging.getLogger(__name__)
INTENT = "message_content"


def notice_text(plugins: list[str]) -> str:
    names = ", ".join(f"**{p}**" for p in plugins)
    verb = "reads" if len(plugins) == 1 else "read"
    return (
        f"Note: {names} {verb} the messages in your channels, but this bot runs without "
        "Discord's Message Content intent, so it only sees messages that mention Gigi. "
        "The bot's operator can turn it on in the Discord developer portal (the application → "
        "Bot → Privileged Gateway Intents → Message Content Intent) and then restart Gigi with "
        "`GIGI_DISCORD_MESSAGE_CONTENT=1`."
    )


class ContentNotice:
    """Remembers which guilds were told in this process (once per guild is enough)."""

    def __init__(self, bot: GigiBot) -> None:
        self.bot = bot
        self.told: set[str] = set()
        self.logged: set[str] = set()

    def wanting(self) -> frozenset[str]:
        """Loaded plugins whose manifest asks for message content."""
        manifests = self.bot.kernel.registry.manifests
        return frozenset(n for n, m in manifests.items() if INTENT in m.plugin.intents)

    async def missing_for(self, guild_id: str) -> list[str]:
        """Plugins enabled in the guild that need the intent this bot runs without."""
        if self.bot.intents.message_content:
            return []
        wanting = self.wanting()
        if not wanting:
            return []
        enabled = await self.bot.kernel.plugin_state.enabled_plugins(guild_id)
        return sorted(wanting.intersection(enabled))

    async def once(self, guild_id: str) -> str | None:
        """The notice for an admin's answer, the first time it applies in this guild."""
        if guild_id in self.told:
            return None
        plugins = await self.missing_for(guild_id)
        if not plugins:
            return None
        self.told.add(guild_id)
        return notice_text(plugins)

    async def log_guilds(self, guilds: Iterable[Any]) -> None:
        """One log line per guild at start-up (and on joining), for the operator."""
        if self.bot.intents.message_content or not self.wanting():
            return
        for guild in guilds:
            gid = str(guild.id)
            if gid in self.logged:
                continue
            try:
                plugins = await self.missing_for(gid)
            except Exception as exc:
                log.warning("could not check plugins of guild %s: %s", gid, type(exc).__name__)
                continue
            if plugins:
                self.logged.add(gid)
                log.warning(
                    "guild %s enables %s, which read(s) messages, but the Message Content "
                    "intent is off: they only see messages that mention Gigi. Enable the "
                    "intent in the developer portal and set GIGI_DISCORD_MESSAGE_CONTENT=1.",
                    gid,
                    ", ".join(plugins),
                )
