"""The surface events the console publishes: each chat line is a ``MessageCreated``."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from gigi_core.events import MessageCreated

DISCORD_EPOCH_MS = 1_420_070_400_000


def snowflake(sequence: int) -> str:
    """A Discord-shaped id (time-ordered, unique across sessions), so a plugin that dedupes
    by message id never mistakes today's line for yesterday's."""
    millis = time.time_ns() // 1_000_000 - DISCORD_EPOCH_MS
    return str((millis << 22) | (sequence & 0x3FFFFF))


def chat_line(
    guild_id: str, channel_id: str, author_id: str, text: str, sequence: int
) -> MessageCreated:
    """A console line as observers see it: addressed to Gigi (``mentions_bot``), since the
    console sends every plain line to the agent. A plugin that answers chat itself
    (ambient) then keeps it as history and leaves the answer to the console; it answered
    each line a second time before."""
    return MessageCreated(
        guild_id=guild_id,
        surface="console",
        message_id=snowflake(sequence),
        channel_id=channel_id,
        channel_kind="text",
        author_id=author_id,
        created_at=datetime.now(UTC),
        text=text,
        mentions_bot=True,
    )
