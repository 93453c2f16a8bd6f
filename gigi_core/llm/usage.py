"""Usage events: one row per provider call, success or failure, metadata only.

The record's fields are the whole story: there is no parameter for a prompt, a completion,
a provider body or a key, so none can be stored by accident.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from gigi_core.llm.records import LlmConfigError, UsageRow
from gigi_core.store.llm_tables import LlmUsageEvent

if TYPE_CHECKING:
    from gigi_core.llm.types import Usage
    from gigi_core.store.db import Database


@dataclass(frozen=True)
class UsageRecord:
    request_id: str
    provider: str
    model: str
    purpose: str
    billing_owner_type: str
    billing_owner_id: str
    status: str  # ok | error
    actor_id: str | None = None
    guild_id: str | None = None
    channel_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    error_class: str | None = None
    latency_ms: float | None = None

    def with_usage(self, usage: Usage) -> UsageRecord:
        return UsageRecord(
            **{
                **asdict(self),
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "reasoning_tokens": usage.reasoning_tokens,
                "cached_tokens": usage.cached_input_tokens,
            }
        )


_RELATIVE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str | None, *, now: datetime | None = None) -> datetime | None:
    """``7d``, ``24h``, ``30m``, ``2w`` or an ISO date/time (UTC when no zone is given)."""
    if text is None or not text.strip():
        return None
    now = now or datetime.now(UTC)
    match = _RELATIVE.match(text)
    if match:
        return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise LlmConfigError(
            f"cannot read --since {text!r}", hint="use e.g. 7d, 24h, 2026-01-31 or an ISO time"
        ) from None
    # SQLite keeps UTC wall-clock times, so compare in UTC on both backends.
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


class UsageLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, record: UsageRecord) -> None:
        async with self.db.session() as s:
            s.add(LlmUsageEvent(**asdict(record)))

    async def summary(self, guild_id: str, since: datetime | None = None) -> list[UsageRow]:
        """Counts and token sums for one guild, by provider, model, purpose and status."""
        e = LlmUsageEvent
        keys = (e.provider, e.model, e.purpose, e.status)
        query = (
            select(
                *keys,
                func.count(),
                func.coalesce(func.sum(e.input_tokens), 0),
                func.coalesce(func.sum(e.output_tokens), 0),
                func.coalesce(func.sum(e.reasoning_tokens), 0),
                func.coalesce(func.sum(e.cached_tokens), 0),
            )
            .where(e.guild_id == guild_id)
            .group_by(*keys)
            .order_by(*keys)
        )
        if since is not None:
            query = query.where(e.created_at >= since)
        async with self.db.session() as s:
            rows = await s.execute(query)
            return [UsageRow(*(r[:4]), *(int(v) for v in r[4:])) for r in rows]

    async def events(self, guild_id: str | None = None, limit: int = 100) -> list[dict]:
        """Recent raw events (metadata only), newest first; for tests and debugging."""
        query = select(LlmUsageEvent).order_by(LlmUsageEvent.id.desc()).limit(limit)
        if guild_id is not None:
            query = query.where(LlmUsageEvent.guild_id == guild_id)
        async with self.db.session() as s:
            return [
                {c.name: getattr(r, c.name) for c in LlmUsageEvent.__table__.columns}
                for r in await s.scalars(query)
            ]
