"""The per-channel sliding window: the last N messages, in process memory only.

The only place message text lives. Flushed when a channel is secured, deleted or disabled,
and lost on restart by design: extraction never reads across a secure range
because nothing from before it is left.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WindowMessage:
    message_id: str
    author_id: str
    created_ms: int
    text: str
    mentions: tuple[str, ...] = ()


class Windows:
    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._by_channel: dict[tuple[str, str], deque[WindowMessage]] = {}

    def push(self, guild_id: str, channel_id: str, message: WindowMessage) -> None:
        key = (guild_id, channel_id)
        window = self._by_channel.get(key)
        if window is None:
            window = self._by_channel[key] = deque(maxlen=self.size)
        window.append(message)

    def snapshot(self, guild_id: str, channel_id: str) -> tuple[WindowMessage, ...]:
        return tuple(self._by_channel.get((guild_id, channel_id), ()))

    def forget_message(self, guild_id: str, channel_id: str, message_ids: set[str]) -> None:
        """A deleted (or edited away) message leaves the window at once."""
        window = self._by_channel.get((guild_id, channel_id))
        if window:
            kept = [m for m in window if m.message_id not in message_ids]
            window.clear()
            window.extend(kept)

    def forget_author(self, user_id: str, guild_id: str | None) -> int:
        """A member's erasure: their messages leave every window (of a guild, or all)."""
        dropped = 0
        for (guild, _), window in self._by_channel.items():
            if guild_id is not None and guild != guild_id:
                continue
            kept = [m for m in window if m.author_id != user_id]
            dropped += len(window) - len(kept)
            window.clear()
            window.extend(kept)
        return dropped

    def flush(self, guild_id: str, channel_id: str | None = None) -> None:
        if channel_id is not None:
            self._by_channel.pop((guild_id, channel_id), None)
            return
        for key in [k for k in self._by_channel if k[0] == guild_id]:
            del self._by_channel[key]

    def channels(self) -> int:
        return len(self._by_channel)
