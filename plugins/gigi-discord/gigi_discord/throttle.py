"""A per-person limit on agent runs, so one member cannot spend a server's model budget alone.

The count lives in ``kernel.limits``: on PostgreSQL every bot process shares it, so a member
whose requests land on several shards still meets one limit.
"""

from __future__ import annotations

from typing import Any

SLOW_DOWN = "You are asking faster than this server allows; please wait a minute and try again."


class RunThrottle:
    """At most ``per_minute`` runs per (guild, user) in any 60-second window; 0 is no limit."""

    def __init__(self, per_minute: int, limits: Any) -> None:
        self.per_minute = per_minute
        self.limits = limits

    async def allow(self, guild_id: str, user_id: str) -> bool:
        return await self.limits.take("discord.runs", f"{guild_id}:{user_id}", self.per_minute)
