"""Posting through the kernel's outbox port (``kernel.outbox.post``), the one place that does.

``PostUnavailable`` (no surface for the guild here) propagates so the job is retried;
``PostForbidden`` is returned as None (the bot may not post there: nothing to retry).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PLUGIN = "knowledge"


async def post(
    kernel: Any,
    guild_id: str,
    channel_id: str,
    text: str,
    buttons: Sequence[tuple[str, str, dict[str, Any], str]] = (),
) -> str | None:
    """Post ``text`` with buttons ``(label, command, arguments, style)``; the message id."""
    from gigi_core.events import Button, OutboundMessage, PostForbidden

    message = OutboundMessage(
        guild_id=guild_id,
        channel_id=channel_id,
        text=text,
        buttons=tuple(
            Button(label=b[0], command=b[1], arguments=b[2], style=b[3]) for b in buttons
        ),  # type: ignore[arg-type]
    )
    try:
        posted = await kernel.outbox.post(message, plugin=PLUGIN)
    except PostForbidden:
        return None
    return str(posted.message_id)
