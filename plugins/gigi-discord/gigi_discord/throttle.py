"""A per-person limit on agent runs, so one member cannot spend a server's model budget alone."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

SLOW_DOWN = "You are asking faster than this server allows; please wait a minute and try again."


class RunThrottle:
    """At most ``per_minute`` runs per (guild, user) in any sliding 60-second window."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._seen: dict[tuple[str, str], deque[float]] = {}

    def allow(self, guild_id: str, user_id: str) -> bool:
        if self.per_minute <= 0:  # 0 turns the limit off
            return True
        now = self.clock()
        window = self._seen.setdefault((guild_id, user_id), deque())
        while window and now - window[0] >= 60:
            window.popleft()
        if len(window) >= self.per_minute:
            return False
        window.append(now)
        return True
