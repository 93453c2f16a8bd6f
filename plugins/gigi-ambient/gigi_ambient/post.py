"""Posting answers and staff notes: the one place that talks to the kernel's outbox port.

``kernel.outbox`` posts with no pings at all and splits long text; until a kernel has it,
nothing can be posted and answers are counted as undelivered (the log says why).
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


class Poster(Protocol):
    async def post(
        self, guild_id: str, channel_id: str, text: str, reply_to: str | None = None
    ) -> str | None:
        """Post ``text``; the posted message's id (None when nothing was posted)."""

    async def can_post(self, guild_id: str, channel_id: str) -> bool: ...


class OutboxPoster:
    """``kernel.outbox`` behind the ``Poster`` protocol."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def post(
        self, guild_id: str, channel_id: str, text: str, reply_to: str | None = None
    ) -> str | None:
        from gigi_core.events import OutboundMessage  # type: ignore[attr-defined]

        outbox = getattr(self.kernel, "outbox", None)
        if outbox is None:
            log.warning("ambient: this kernel has no outbox port; an answer was not posted")
            return None
        message = OutboundMessage(
            guild_id=guild_id, channel_id=channel_id, text=text, reply_to=reply_to
        )
        posted = await outbox.post(message, plugin=PLUGIN)
        return str(posted.message_id)

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        outbox = getattr(self.kernel, "outbox", None)
        if outbox is None:
            return False
        return bool(await outbox.can_post(guild_id, channel_id))
