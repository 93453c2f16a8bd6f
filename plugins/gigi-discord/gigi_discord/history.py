"""The bot's ``kernel.history`` reader: pages of a channel's past messages for backfills.

Pages go through discord.py's ``channel.history`` (its HTTP client keeps Discord's rate
limits, so a backfill never storms); messages come out exactly as live ones are published.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord

from gigi_core.events import HistoryForbidden, HistoryPage
from gigi_discord.events import message_created

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot


class DiscordHistory:
    def __init__(self, bot: GigiBot) -> None:
        self.bot = bot

    def serves(self, guild_id: str) -> bool:
        return guild_id.isdigit() and self.bot.get_guild(int(guild_id)) is not None

    async def page(
        self, guild_id: str, channel_id: str, *, before: str | None, limit: int
    ) -> HistoryPage:
        guild = self.bot.get_guild(int(guild_id))
        channel = (
            guild.get_channel_or_thread(int(channel_id)) if guild and channel_id.isdigit() else None
        )
        if guild is None or channel is None or not hasattr(channel, "history"):
            raise HistoryForbidden(
                f"channel {channel_id} is not a text channel of guild {guild_id}"
            )
        perms = channel.permissions_for(guild.me)
        if not (perms.view_channel and perms.read_message_history):
            raise HistoryForbidden(
                f"Gigi may not read the history of <#{channel_id}>",
                hint="give its role View Channel and Read Message History there",
            )
        cursor = discord.Object(int(before)) if before else None
        try:
            found = [m async for m in channel.history(limit=limit, before=cursor)]
        except discord.Forbidden:
            raise HistoryForbidden(f"Discord refused the history of <#{channel_id}>") from None
        except discord.NotFound:
            raise HistoryForbidden(f"<#{channel_id}> no longer exists") from None
        events = tuple(e for m in found if (e := message_created(self.bot, m)) is not None)
        return HistoryPage(events, str(found[-1].id) if len(found) == limit else None)
