"""A read port for usage over time: a guild's LLM calls and tokens per UTC day, split by
model or purpose, read from the daily rollup only, so a plot costs O(days), never O(calls)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from sqlalchemy import func, select

from gigi_core.errors import ConfigError
from gigi_core.store.db import Database
from gigi_core.store.llm_tables import LlmUsageEvent, LlmUsageRollup

SplitBy = Literal["model", "purpose", "provider", "status"]
MAX_DAYS = 366


@dataclass(frozen=True)
class UsagePoint:
    """One day of one series (a model, a purpose ...): calls and tokens in and out."""

    day: date
    key: str
    calls: int
    input_tokens: int
    output_tokens: int


async def usage_by_day(
    db: Database, guild_id: str, *, days: int = 30, split_by: SplitBy = "model"
) -> list[UsagePoint]:
    """The last ``days`` whole and current UTC days of ``guild_id``, oldest first."""
    if not 1 <= days <= MAX_DAYS:
        raise ConfigError(f"usage days must be between 1 and {MAX_DAYS}")
    if split_by not in ("model", "purpose", "provider", "status"):
        raise ConfigError("usage split must be one of model, purpose, provider, status")
    await db.writer.drain()  # usage queued behind a reply counts too
    r = LlmUsageRollup
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=days - 1)
    key = r.__table__.c[split_by]
    query = (
        select(
            r.bucket,
            key,
            func.sum(r.calls),
            func.sum(r.input_tokens),
            func.sum(r.output_tokens),
        )
        .where(r.guild_id == guild_id, r.period == "day", r.bucket >= first)
        .group_by(r.bucket, key)
        .order_by(r.bucket, key)
    )
    async with db.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return [
        UsagePoint(
            day=_day(bucket),
            key=str(name),
            calls=int(calls or 0),
            input_tokens=int(tin or 0),
            output_tokens=int(tout or 0),
        )
        for bucket, name, calls, tin, tout in rows
    ]


@dataclass(frozen=True)
class ActorUsage:
    """One member's calls and tokens over a window; ``actor_id`` None for calls no member
    made (plugins' own work, background jobs). A deleted member's rows hold a pseudonym."""

    actor_id: str | None
    calls: int
    input_tokens: int
    output_tokens: int

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


async def usage_by_actor(
    db: Database, guild_id: str, *, days: int = 30, limit: int = 20
) -> list[ActorUsage]:
    """The ``limit`` members who spent the most tokens in ``guild_id`` over the last
    ``days`` UTC days (as ``usage_by_day`` counts them), most first.

    The rollups hold no member, so this reads the guild's usage events of the window
    (one index range): O(calls in the window), meant for an admin page, not a hot path.
    """
    if not 1 <= days <= MAX_DAYS:
        raise ConfigError(f"usage days must be between 1 and {MAX_DAYS}")
    if not 1 <= limit <= 1000:
        raise ConfigError("usage members: limit must be between 1 and 1000")
    await db.writer.drain()
    e = LlmUsageEvent
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=days - 1)
    tokens_in = func.coalesce(func.sum(e.input_tokens), 0)
    tokens_out = func.coalesce(func.sum(e.output_tokens), 0)
    query = (
        select(e.actor_id, func.count(), tokens_in, tokens_out)
        .where(e.guild_id == guild_id, e.created_at >= first)
        .group_by(e.actor_id)
        .order_by((tokens_in + tokens_out).desc(), func.count().desc(), e.actor_id)
        .limit(limit)
    )
    async with db.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return [
        ActorUsage(
            actor_id=None if actor is None else str(actor),
            calls=int(calls or 0),
            input_tokens=int(tin or 0),
            output_tokens=int(tout or 0),
        )
        for actor, calls, tin, tout in rows
    ]


def _day(bucket: datetime) -> date:
    return (bucket if bucket.tzinfo else bucket.replace(tzinfo=UTC)).astimezone(UTC).date()
