"""Posting answers and staff notes: the one place that talks to the kernel's outbox port.

``kernel.outbox`` posts with no pings at all (allowed mentions none) and splits long text;
``PostUnavailable`` / ``PostForbidden`` are logged by class by the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)
PLUGIN = "ambient"

#: Whether a member may see a channel: (guild_id, channel_id, user_id) -> bool, or None
#: when nobody can tell (then a channel the model names is refused).
MemberSees = Callable[[str, str, str], Awaitable[bool | None]]


def surface_member_sees(kernel: Any) -> MemberSees:
    """What the surface serving the guild says now (``kernel.outbox.member``); None when no
    surface here serves it or the author is no longer a member."""

    async def sees(guild_id: str, channel_id: str, user_id: str) -> bool | None:
        view = await kernel.outbox.member(guild_id, user_id)
        return None if view is None else bool(await view.channel_visible(channel_id))

    return sees


class Poster(Protocol):
    async def post(
        self, guild_id: str, channel_id: str, text: str, reply_to: str | None = None
    ) -> str | None:
        """Post ``text``; the posted message's id (None when nothing was posted)."""

    async def can_post(self, guild_id: str, channel_id: str) -> bool: ...


class OutboxPoster:
    """``kernel.outbox`` behind the ``Poster`` protocol (no pings; long text is split)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def post(
        self, guild_id: str, channel_id: str, text: str, reply_to: str | None = None
    ) -> str | None:
        from gigi_core.events import OutboundMessage

        message = OutboundMessage(
            guild_id=guild_id, channel_id=channel_id, text=text, reply_to=reply_to
        )
        posted = await self.kernel.outbox.post(message, plugin=PLUGIN)
        return str(posted.message_id)

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        return bool(await self.kernel.outbox.can_post(guild_id, channel_id))
