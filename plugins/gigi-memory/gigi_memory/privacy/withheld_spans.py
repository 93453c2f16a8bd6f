"""When a channel was paused or secure: a backfill or an import brings back nothing from then.

The kernel records both spans (``kernel.channels.pause_ranges`` / ``secure_ranges``); live
ingestion never sees those messages (the router withholds them), so history must not either.
A thread follows its channel, as live delivery does. Each span is widened by ``MARGIN_MS``
on both sides: the bot's clock (the span) and Discord's (a message's time) are not the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

MARGIN_MS = 2_000
REASONS = {"secure": "while the channel was secure", "paused": "while the channel was paused"}


def _ms(when: datetime) -> int:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@dataclass
class WithheldSpans:
    """The paused and secure spans of a channel and its parent, read once per page or import."""

    kernel: Any
    guild_id: str
    spans: dict[str, list[tuple[int, int | None, str]]] = field(default_factory=dict)

    async def load(self, *channel_ids: str | None) -> WithheldSpans:
        for channel in channel_ids:
            if channel and channel not in self.spans:
                rows = [
                    *await self.kernel.channels.secure_ranges(self.guild_id, channel),
                    *await self.kernel.channels.pause_ranges(self.guild_id, channel),
                ]
                self.spans[channel] = [
                    (
                        _ms(r.started_at),
                        _ms(r.ended_at) if r.ended_at is not None else None,
                        r.state,
                    )
                    for r in rows
                ]
        return self

    def reason(self, created_ms: int, *channel_ids: str | None) -> str | None:
        """Why a message written at ``created_ms`` here is skipped, or None."""
        for channel in channel_ids:
            for start, end, state in self.spans.get(channel or "", ()):
                if created_ms >= start - MARGIN_MS and (
                    end is None or created_ms <= end + MARGIN_MS
                ):
                    return REASONS.get(state, REASONS["secure"])
        return None
