"""Gateway events become kernel events (``gigi_core.events``) for plugins that observe them.

Raw events are used for edits and deletes so that messages discord.py never cached (sent
before a restart, or pushed out of its cache) still reach observers. Every conversion is a
pure function of what Discord sent; ``Publisher`` is the mixin on the client that hands the
result to ``kernel.publish``, which only queues it, so a mention's answer never waits.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import discord

from gigi_core.events import (
    Attachment,
    ChannelDeleted,
    ChannelKind,
    Event,
    GuildJoined,
    GuildLeft,
    MemberLeft,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    ReactionsCleared,
)
from gigi_discord.conversation import addressed

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

log = logging.getLogger(__name__)

THREADS = (
    discord.ChannelType.public_thread,
    discord.ChannelType.news_thread,
    discord.ChannelType.private_thread,
)
VOICE = (discord.ChannelType.voice, discord.ChannelType.stage_voice)


def _id(value: int | None) -> str | None:
    return str(value) if value is not None else None


def channel_kind(channel: Any, client: discord.Client | None = None) -> ChannelKind:
    """What kind of place a message is in, from discord.py's channel type.

    A thread whose parent is a forum (or media) channel is a forum post; the text chat of
    a voice or stage channel is ``voice_text``. Uncached channels fall back on ``type``.
    """
    kind = getattr(channel, "type", None)
    if isinstance(channel, discord.DMChannel) or kind is discord.ChannelType.private:
        return "dm"
    if isinstance(channel, discord.GroupChannel) or kind is discord.ChannelType.group:
        return "group_dm"
    if kind in THREADS:
        if kind is discord.ChannelType.private_thread:
            return "private_thread"
        parent = getattr(channel, "parent", None)
        if parent is None and client is not None:
            parent_id = getattr(channel, "parent_id", None)
            parent = client.get_channel(parent_id) if parent_id else None
        return "forum_post" if isinstance(parent, discord.ForumChannel) else "thread"
    if kind in VOICE:
        return "voice_text"
    if (
        kind is None
        and getattr(channel, "guild", None) is None
        and not getattr(channel, "guild_id", None)
    ):
        return "dm"
    return "text"


def parent_of(channel: Any) -> str | None:
    """The text or forum channel a thread belongs to; None for anything else."""
    if getattr(channel, "type", None) in THREADS:
        return _id(getattr(channel, "parent_id", None))
    return None


def reply_target(message: discord.Message) -> str | None:
    """The id of the message this one replies to (a forward is not a reply)."""
    ref = message.reference
    if ref is None or ref.message_id is None:
        return None
    if getattr(ref, "type", discord.MessageReferenceType.default) is not (
        discord.MessageReferenceType.default
    ):
        return None
    return str(ref.message_id)


def message_created(bot: GigiBot, message: discord.Message) -> MessageCreated | None:
    """A user, bot or webhook message (system messages such as "X joined" are skipped).

    ``text`` is what Discord delivered: without the Message Content intent it is empty for
    messages that are not addressed to Gigi. Attachments carry metadata only.
    """
    if message.is_system():
        return None
    guild = message.guild
    me = bot.user
    own = me is not None and message.author.id == me.id
    return MessageCreated(
        guild_id=_id(guild.id) if guild is not None else None,
        message_id=str(message.id),
        channel_id=str(message.channel.id),
        parent_channel_id=parent_of(message.channel),
        channel_kind=channel_kind(message.channel, bot),
        author_id=str(message.author.id),
        author_name=message.author.display_name,
        author_is_bot=message.author.bot,
        author_is_webhook=message.webhook_id is not None,
        author_is_self=own,
        created_at=message.created_at,
        text=message.content or "",
        mentioned_user_ids=tuple(dict.fromkeys(str(u.id) for u in message.mentions)),
        mentioned_role_ids=tuple(dict.fromkeys(str(r) for r in _role_ids(message))),
        reply_to_id=reply_target(message),
        attachments=tuple(
            Attachment(id=str(a.id), filename=a.filename, content_type=a.content_type, size=a.size)
            for a in message.attachments
        ),
        mentions_bot=not own and (guild is None or addressed(bot, message)),
    )


def _role_ids(message: discord.Message) -> list[int]:
    """Role mentions from the payload (present without Message Content), then the text."""
    return [r.id for r in message.role_mentions] + list(message.raw_role_mentions)


def message_edited(bot: GigiBot, payload: discord.RawMessageUpdateEvent) -> MessageEdited | None:
    """An edit with new text, cached or not; None when the payload says nothing about text.

    Discord sends updates without ``content`` (embeds unfurling) and, without the Message
    Content intent, with an empty one: publishing those would tell observers the text was
    erased, so only an edit whose text we really know is published.
    """
    data: dict[str, Any] = dict(payload.data)  # type: ignore[arg-type]
    if "content" not in data:
        return None
    text = data.get("content") or ""
    if not text and not bot.intents.message_content:
        return None
    channel = bot.get_channel(payload.channel_id) or payload.message.channel
    edited = payload.message.edited_at or datetime.now(UTC)
    mentions = data.get("mentions")
    return MessageEdited(
        guild_id=_id(payload.guild_id),
        message_id=str(payload.message_id),
        channel_id=str(payload.channel_id),
        parent_channel_id=parent_of(channel),
        text=text,
        edited_at=edited,
        mentioned_user_ids=(
            tuple(dict.fromkeys(str(u["id"]) for u in mentions))
            if isinstance(mentions, list)
            else None
        ),
    )


def messages_deleted(
    bot: GigiBot, channel_id: int, guild_id: int | None, ids: list[int]
) -> MessageDeleted:
    """One event for one deletion or a whole bulk delete, cached or not."""
    channel = bot.get_channel(channel_id)
    return MessageDeleted(
        guild_id=_id(guild_id),
        channel_id=str(channel_id),
        message_ids=tuple(str(i) for i in sorted(ids)),
        parent_channel_id=parent_of(channel) if channel is not None else None,
    )


class Publisher:
    """Gateway handlers of ``GigiBot``: each one converts, then publishes without waiting.

    A failure to convert or publish is logged by event type only (never message text)
    and never reaches the mention handling that runs after it.
    """

    kernel: Any

    async def publish(self, event: Event | None) -> None:
        if event is None:
            return
        try:
            await self.kernel.publish(event)
        except Exception as exc:
            log.error("could not publish %s: %s", type(event).__name__, type(exc).__name__)

    def _bot(self) -> GigiBot:
        return self  # type: ignore[return-value]

    async def publish_message(self, message: discord.Message) -> None:
        try:
            event = message_created(self._bot(), message)
        except Exception as exc:  # a payload shape we did not expect must not stop mentions
            log.error("could not read message %s: %s", message.id, type(exc).__name__)
            return
        await self.publish(event)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self.publish(message_edited(self._bot(), payload))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.publish(
            messages_deleted(
                self._bot(), payload.channel_id, payload.guild_id, [payload.message_id]
            )
        )

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self.publish(
            messages_deleted(
                self._bot(), payload.channel_id, payload.guild_id, list(payload.message_ids)
            )
        )

    async def on_reaction_clear(
        self, message: discord.Message, reactions: list[discord.Reaction]
    ) -> None:
        """discord.py's signature ``(message, reactions)``: every reaction was removed."""
        if message.guild is None:
            return
        await self.publish(
            ReactionsCleared(
                guild_id=str(message.guild.id),
                channel_id=str(message.channel.id),
                message_id=str(message.id),
                parent_channel_id=parent_of(message.channel),
                count=len(reactions),
            )
        )

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        """The channel, and its threads Gigi knew about (Discord sends no event for those)."""
        gid = str(channel.guild.id)
        await self.publish(ChannelDeleted(guild_id=gid, channel_id=str(channel.id)))
        for thread in getattr(channel, "threads", []):
            await self.publish(ChannelDeleted(guild_id=gid, channel_id=str(thread.id)))

    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        await self.publish(
            ChannelDeleted(guild_id=str(payload.guild_id), channel_id=str(payload.thread_id))
        )

    async def on_raw_member_remove(self, payload: discord.RawMemberRemoveEvent) -> None:
        """Only arrives with the privileged members intent (GIGI_DISCORD_MEMBERS=1)."""
        await self.publish(MemberLeft(guild_id=str(payload.guild_id), user_id=str(payload.user.id)))

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        await self.publish(GuildLeft(guild_id=str(guild.id)))

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self.publish(GuildJoined(guild_id=str(guild.id)))
        bot = self._bot()
        bot.spawn(bot.content_notice.log_guilds([guild]))
