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

#: May an answer to a member's message in ``source`` be posted in ``target`` instead:
#: (guild_id, source, target, user_id) -> bool, or None when nobody can tell (then no).
MayMove = Callable[[str, str, str, str], Awaitable[bool | None]]


def surface_may_move(kernel: Any) -> MayMove:
    """The member must read ``target`` now, and everyone reading ``target`` must be able to
    read ``source`` (the answer is written from its history): from the surface serving the
    guild (``kernel.outbox.member`` with ``target`` as the audience)."""

    async def may(guild_id: str, source: str, target: str, user_id: str) -> bool | None:
        view = await kernel.outbox.member(guild_id, user_id, shown_in=target)
        if view is None:
            return None
        if not await view.channel_visible(target):
            return False
        return source in (await view.visible_channels() or frozenset())

    return may


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
