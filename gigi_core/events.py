"""Typed surface events: what a surface, an importer or a test hands to ``kernel.publish``.

Events are frozen and carry ids, flags and times; ``text`` is the only content field, and the
kernel delivers it to observers without storing it anywhere. Plugins receive them through the
``observe_event`` hook, only in guilds where they are enabled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from gigi_core.errors import GigiError
from gigi_core.outbox_files import OutboundFile, check_files

ChannelKind = Literal[
    "text", "thread", "private_thread", "forum_post", "voice_text", "dm", "group_dm"
]
ObservationState = Literal["active", "paused", "secure"]
ButtonStyle = Literal["primary", "secondary", "success", "danger"]
OBSERVATION_STATES: tuple[str, ...] = ("active", "paused", "secure")

__all__ = [
    "OBSERVATION_STATES",
    "Attachment",
    "Button",
    "ButtonExpired",
    "ButtonStyle",
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
    "MemberView",
    "MessageCreated",
    "MessageDeleted",
    "MessageEdited",
    "ObservationState",
    "OutboundFile",
    "OutboundMessage",
    "OutboxError",
    "PostForbidden",
    "PostUnavailable",
    "PostedButton",
    "PostedMessage",
    "Poster",
    "ReactionsCleared",
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
    # The name the author wrote under here (a member's display name), untrusted like the
    # text; None where the surface does not know it.
    author_name: str | None = None
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
    # The users the new text mentions; None when the surface does not know (the mentions
    # kept from before stand), a tuple (maybe empty) replaces them.
    mentioned_user_ids: tuple[str, ...] | None = None
    # The channel is paused or secure: the new text is withheld (``text`` is empty, the
    # mentions None), and an observer drops whatever it kept of the old text.
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
class ReactionsCleared(Event):
    """Every reaction was removed from a message at once (Discord's reaction clear)."""

    channel_id: str
    message_id: str
    parent_channel_id: str | None = None
    count: int = 0  # how many distinct reactions were removed


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


# -- posting on a plugin's behalf (kernel.outbox) --------------------------------------------


@dataclass(frozen=True)
class Button:
    """A button under a posted message. Pressing it runs ``command`` (a manifest-declared
    command of the posting plugin) with ``arguments`` as the member who pressed, through the
    policy: a button never does more than that member could by typing the command."""

    label: str
    command: str
    arguments: dict[str, Any] = field(default_factory=dict)
    style: ButtonStyle = "secondary"


@dataclass(frozen=True)
class OutboundMessage:
    """What a plugin asks ``kernel.outbox.post`` to say. Surfaces never ping anyone with it.

    Button arguments are stored until the buttons expire: put ids in them, never message text.
    """

    guild_id: str
    channel_id: str
    text: str
    buttons: tuple[Button, ...] = ()
    reply_to: str | None = None  # a message id in the same channel
    buttons_ttl_seconds: int = 7 * 86400
    # pictures and other files, posted with the text (``gigi_core.outbox_files``: capped)
    files: tuple[OutboundFile, ...] = ()

    def __post_init__(self) -> None:
        check_files(self.files)


@dataclass(frozen=True)
class PostedButton:
    """A button as a surface renders it: ``token`` goes into its custom id."""

    token: str
    button: Button


@dataclass(frozen=True)
class PostedMessage:
    message_id: str
    channel_id: str
    url: str | None = None


@dataclass(frozen=True)
class MemberView:
    """Who a member is now and what they may read, from the surface (never from message
    text): what a plugin acting on an event needs to build a ``Request`` for them."""

    actor: Any  # a gigi_core.Actor: id, role ids, admin flag
    channel_visible: Callable[[str], Awaitable[bool]]  # may they read that channel now?
    visible_channels: Callable[[], Awaitable[frozenset[str] | None]]  # all they may read


class Poster(Protocol):
    """What a running surface registers with ``kernel.outbox.register``."""

    def serves(self, guild_id: str) -> bool:
        """True when this process is connected to the guild (it may post there)."""

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        """Whether the bot may post in the channel now (it exists; permissions allow)."""

    async def post(
        self, message: OutboundMessage, buttons: tuple[PostedButton, ...]
    ) -> PostedMessage:
        """Post without pings, split at the surface's limit; raises ``PostForbidden``."""

    async def member(
        self, guild_id: str, user_id: str, *, shown_in: str | None = None
    ) -> MemberView | None:
        """The member as the surface knows them now; None when not (or no longer) a member.

        ``shown_in``: the channel where an answer to them is posted for everyone there, so
        ``visible_channels`` lists only what that audience may read too.
        """


class PostUnavailable(GigiError):
    """No surface connected to this guild runs in this process now: try again later."""


class PostForbidden(GigiError):
    """The bot may not post there (channel gone or hidden, no permission, plugin off).

    A job that raises it fails at once: retrying cannot help until an admin changes it.
    """

    retry_job = False


class OutboxError(GigiError):
    """A plugin asked for a post the kernel will not make (bad buttons, unknown command)."""


class ButtonExpired(GigiError):
    """The pressed button is past its time or unknown: its message is older than its buttons."""
