"""The bot's ``kernel.outbox`` poster: messages plugins post, and the buttons under them.

A button's custom id is ``gigi:b:<token>``; a ``DynamicItem`` template routes a click after
a restart too. The kernel maps the token to the plugin's command and its arguments; the
command then runs as the member who pressed, through the same path as typing it
(``commands.invoke.run_command``), and its result is shown to them alone.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING, Any

import discord

from gigi_core import GigiError
from gigi_core.events import (
    MemberView,
    OutboundMessage,
    PostedButton,
    PostedMessage,
    PostForbidden,
)
from gigi_core.surfaces import split_text
from gigi_discord.errors import Refusal, sentence, tell

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

log = logging.getLogger(__name__)
TEMPLATE = r"gigi:b:(?P<token>[A-Za-z0-9_-]{8,40})"
LIMIT = 2000
STYLES = {
    "primary": discord.ButtonStyle.primary,
    "secondary": discord.ButtonStyle.secondary,
    "success": discord.ButtonStyle.success,
    "danger": discord.ButtonStyle.danger,
}


class OutboxButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=TEMPLATE):
    """A plugin's button; the label and style are only what the message showed."""

    def __init__(self, token: str, label: str = "…", style: str = "secondary") -> None:
        super().__init__(
            discord.ui.Button(
                label=label,
                style=STYLES.get(style, STYLES["secondary"]),
                custom_id=f"gigi:b:{token}",
            )
        )
        self.token = token

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: Any, /
    ) -> OutboxButton:
        return cls(match["token"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await press(interaction, self.token)


async def press(interaction: discord.Interaction[Any], token: str) -> None:
    """Run the button's command as whoever pressed it; refusals go to them alone."""
    from gigi_discord.commands.invoke import run_command

    bot: GigiBot = interaction.client  # type: ignore[assignment]
    if interaction.guild is None:
        await tell(interaction, "This button only works in a server.")
        return
    try:
        target = await bot.kernel.outbox.button(token, guild_id=str(interaction.guild.id))
        await run_command(interaction, target.spec, target.arguments, private=True)
    except Refusal as exc:
        await tell(interaction, exc.message)
    except GigiError as exc:
        await tell(interaction, sentence(str(exc)))


class DiscordPoster:
    def __init__(self, bot: GigiBot) -> None:
        self.bot = bot

    def serves(self, guild_id: str) -> bool:
        return guild_id.isdigit() and self.bot.get_guild(int(guild_id)) is not None

    def _channel(self, guild_id: str, channel_id: str) -> Any:
        guild = self.bot.get_guild(int(guild_id)) if guild_id.isdigit() else None
        if guild is None or not channel_id.isdigit():
            return None
        channel = guild.get_channel_or_thread(int(channel_id))
        return channel if channel is not None and hasattr(channel, "send") else None

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        channel = self._channel(guild_id, channel_id)
        if channel is None:
            return False
        perms = channel.permissions_for(channel.guild.me)
        in_thread = isinstance(channel, discord.Thread)
        allowed = perms.send_messages_in_threads if in_thread else perms.send_messages
        return bool(perms.view_channel and allowed)

    async def post(
        self, message: OutboundMessage, buttons: tuple[PostedButton, ...]
    ) -> PostedMessage:
        channel = self._channel(message.guild_id, message.channel_id)
        if channel is None or not await self.can_post(message.guild_id, message.channel_id):
            raise PostForbidden(
                f"Gigi may not post in <#{message.channel_id}>",
                hint="give its role View Channel and Send Messages there",
            )
        parts = split_text(message.text, LIMIT)
        view = None
        if buttons:
            view = discord.ui.View(timeout=None)
            for b in buttons:
                view.add_item(OutboxButton(b.token, b.button.label, b.button.style))
        reference = (
            discord.MessageReference(
                message_id=int(message.reply_to),
                channel_id=channel.id,
                fail_if_not_exists=False,
            )
            if message.reply_to and message.reply_to.isdigit()
            else None
        )
        first: discord.Message | None = None
        try:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                kwargs: dict[str, Any] = {"allowed_mentions": discord.AllowedMentions.none()}
                if i == 0 and reference is not None:
                    kwargs["reference"] = reference
                if last and view is not None:
                    kwargs["view"] = view
                if last and message.files:  # pictures go up as files, never as links
                    kwargs["files"] = [
                        discord.File(io.BytesIO(f.data), filename=f.name) for f in message.files
                    ]
                sent = await channel.send(part, **kwargs)
                first = first or sent
        except discord.Forbidden:
            raise PostForbidden(f"Discord refused a post in <#{message.channel_id}>") from None
        except discord.NotFound:
            raise PostForbidden(f"<#{message.channel_id}> no longer exists") from None
        assert first is not None  # split_text of non-empty text has a part
        return PostedMessage(str(first.id), str(channel.id), first.jump_url)

    async def member(
        self, guild_id: str, user_id: str, *, shown_in: str | None = None
    ) -> MemberView | None:
        """From the member cache (the members intent keeps it), else one fetch; the same
        actor and channel rules as a slash command by that member."""
        from gigi_discord.identity import channel_checker, channel_lister, resolve_actor

        guild = self.bot.get_guild(int(guild_id)) if guild_id.isdigit() else None
        if guild is None or not user_id.isdigit():
            return None
        member = guild.get_member(int(user_id))
        if member is None:
            try:
                member = await guild.fetch_member(int(user_id))
            except discord.HTTPException:
                return None
        actor = await resolve_actor(self.bot.kernel, member)
        listed = channel_lister(guild, member)
        if shown_in is not None:
            where = self._channel(guild_id, shown_in)
            listed = channel_lister(guild, member, shown_in=where) if where else _nothing
        return MemberView(actor, channel_checker(guild, member), listed)


async def _nothing() -> frozenset[str] | None:
    """An answer shown in a channel Gigi cannot see: quote from nowhere (fail closed)."""
    return frozenset()
