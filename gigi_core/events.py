"""Typed surface events: what a surface, an importer or a test hands to ``kernel.publish``.

Events are frozen and carry ids, flags and times; ``text`` is the only content field, and the
kernel delivers it to observers without storing it anywhere. Plugins receive them through the
``observe_event`` hook, only in guilds where they are enabled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from gigi_core.errors import GigiError

ChannelKind = Literal[
    "text", "thread", "private_thread", "forum_post", "voice_text", "dm", "group_dm"
]
ObservationState = Literal["active", "paused", "secure"]
OBSERVATION_STATES: tuple[str, ...] = ("active", "paused", "secure")

__all__ = [
    "OBSERVATION_STATES",
    "Attachment",
    "ChannelDeleted",
    "ChannelKind",
    "ChannelSecured",
    "Event",
    "GuildJoined",
    "GuildLeft",
    "HistoryForbidden",
    "HistoryPage",
    "HistoryReader",
    "HistoryUnavailable",
    "MemberLeft",
    "MessageCreated",
    "MessageDeleted",
    "MessageEdited",
    "ObservationState",
]


@dataclass(frozen=True)
class Attachment:
    """An attachment's metadata; Gigi never downloads or forwards its content."""

    id: str
    filename: str
    content_type: str | None = None
    size: int = 0


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every surface event: where it happened and on which surface."""

    guild_id: str | None
    surface: str = "discord"

    @property
    def is_dm(self) -> bool:
        return self.guild_id is None


@dataclass(frozen=True, kw_only=True)
class MessageCreated(Event):
    """A new message. ``text`` is untrusted content; observers may keep it only per policy."""

    message_id: str
    channel_id: str
    parent_channel_id: str | None = None  # the text/forum channel of a thread
    channel_kind: ChannelKind = "text"
    author_id: str
    author_is_bot: bool = False
    author_is_webhook: bool = False
    author_is_self: bool = False  # written by Gigi itself (its replies, its bot account)
    created_at: datetime
    text: str = ""
    mentioned_user_ids: tuple[str, ...] = ()
    mentioned_role_ids: tuple[str, ...] = ()
    reply_to_id: str | None = None
    attachments: tuple[Attachment, ...] = ()
    mentions_bot: bool = False  # addressed to Gigi (a mention of the bot or a reply to it)


@dataclass(frozen=True, kw_only=True)
class MessageEdited(Event):
    """A message's new text; surfaces publish it also for messages they never cached."""

    message_id: str
    channel_id: str
    parent_channel_id: str | None = None
    text: str = ""
    edited_at: datetime
    # The channel is paused or secure: the new text is withheld (``text`` is empty), and an
    # observer drops whatever it kept of the old text instead of replacing it.
    withheld: bool = False


@dataclass(frozen=True, kw_only=True)
class MessageDeleted(Event):
    """One or many deleted messages (a bulk delete is one event). Always delivered."""

    channel_id: str
    message_ids: tuple[str, ...]
    parent_channel_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ChannelDeleted(Event):
    """A channel (or thread) is gone; observers drop what they hold for it."""

    channel_id: str


@dataclass(frozen=True, kw_only=True)
class ChannelSecured(Event):
    """An admin set a channel to ``secure``: drop in-memory windows for it now."""

    channel_id: str
    by: str | None = None


@dataclass(frozen=True, kw_only=True)
class MemberLeft(Event):
    """A member left (or was removed from) the guild."""

    user_id: str


@dataclass(frozen=True, kw_only=True)
class GuildLeft(Event):
    """The bot left the guild: the purge grace period starts."""


@dataclass(frozen=True, kw_only=True)
class GuildJoined(Event):
    """The bot joined (or rejoined) a guild: a pending purge is cancelled."""


# -- reading a channel's history (backfills) -------------------------------------------------


@dataclass(frozen=True)
class HistoryPage:
    """Up to ``limit`` messages older than the cursor, newest first, as ``MessageCreated``.

    ``before`` is the cursor of the next (older) page; ``None`` once the channel's start is
    reached. A backfill checkpoints it after each page.
    """

    messages: tuple[MessageCreated, ...]
    before: str | None


class HistoryReader(Protocol):
    """What a running surface registers with ``kernel.history.register``."""

    def serves(self, guild_id: str) -> bool:
        """True when this process is connected to the guild (it may page its channels)."""

    async def page(
        self, guild_id: str, channel_id: str, *, before: str | None, limit: int
    ) -> HistoryPage:
        """One page through the surface's own rate limiting; raises ``HistoryForbidden``."""


class HistoryUnavailable(GigiError):
    """No surface connected to this guild runs in this process now: try again later."""


class HistoryForbidden(GigiError):
    """The surface may not read that channel's history (gone, hidden, or no permission).

    A job that raises it fails at once: retrying cannot help until an admin changes it.
    """

    retry_job = False
