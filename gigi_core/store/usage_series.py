"""A read port for usage over time: a guild's LLM calls and tokens per UTC day, split by
model or purpose, read from the daily rollup only, so a plot costs O(days), never O(calls)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import Select, bindparam, func, literal_column, select, union_all

from gigi_core.errors import ConfigError
from gigi_core.store.db import Database
from gigi_core.store.llm_tables import LlmUsageEvent, LlmUsageRollup
from gigi_core.store.usage_actor_fold import monday
from gigi_core.store.usage_actor_tables import (
    NO_ACTOR,
    LlmUsageActorDay,
    LlmUsageActorWatermark,
    LlmUsageActorWeek,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

SplitBy = Literal["model", "purpose", "provider", "status"]
MAX_DAYS = 366
#: Unfolded events up to which the per-member report reads them by id range.
FEW_UNFOLDED = 100_000


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
    ``days`` whole and current UTC days (as ``usage_by_day`` counts them), most first.

    Reads the per-member rollups (folded by the job ``gigi.usage_members_fold``): the
    window's whole weeks from ``llm_usage_actor_weeks``, its other days from
    ``llm_usage_actor_days``, and the window's events after their watermark, in one
    statement, so an event is counted once whether or not it was folded yet.
    """
    if not 1 <= days <= MAX_DAYS:
        raise ConfigError(f"usage days must be between 1 and {MAX_DAYS}")
    if not 1 <= limit <= 1000:
        raise ConfigError("usage members: limit must be between 1 and 1000")
    await db.writer.drain()
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=days - 1)
    async with db.engine.connect() as conn:
        query = await _actor_query(conn, guild_id, first, today.date())
        rows = (await conn.execute(query.limit(limit))).all()
    return [
        ActorUsage(
            actor_id=None if actor in (None, NO_ACTOR) else str(actor),
            calls=int(calls or 0),
            input_tokens=int(tin or 0),
            output_tokens=int(tout or 0),
        )
        for actor, calls, tin, tout in rows
    ]


def _folded(guild_id: str, first: date, today: date) -> list[Select[Any]]:
    """The rollup rows that cover the days from ``first`` on, each day once: the whole
    weeks (Monday to Sunday) between ``first`` and today's week from the weekly table,
    the days before the first whole week and those of today's week from the daily one."""
    d, w = LlmUsageActorDay, LlmUsageActorWeek
    whole, current = monday(first + timedelta(days=6)), monday(today)  # Mondays

    def sums(r: Any) -> Select[Any]:
        return select(
            r.actor_id.label("actor"),
            r.calls.label("calls"),
            r.input_tokens.label("tin"),
            r.output_tokens.label("tout"),
        )

    def days(*where: Any) -> Select[Any]:
        return sums(d).where(d.guild_id == guild_id, *where)

    if whole >= current:  # no whole week before today's: days only
        return [days(d.day >= first)]
    weeks = sums(w).where(w.guild_id == guild_id, w.week >= whole, w.week < current)
    edges = [days(d.day >= current)]
    if first < whole:
        edges.insert(0, days(d.day >= first, d.day < whole))
    return [weeks, *edges]


async def _actor_query(
    conn: AsyncConnection, guild_id: str, first: datetime, today: date
) -> Select[Any]:
    """Rollup weeks and days from ``first`` plus the unfolded events since ``first``, per
    member.

    The watermark is read again inside the statement (one snapshot with the rollups); the
    value read before only picks the plan: few unfolded events are read by id range.
    """
    e, m = LlmUsageEvent, LlmUsageActorWatermark
    mark, top = (
        await conn.execute(
            select(
                select(m.last_event_id).where(m.id == 1).scalar_subquery(),
                select(func.max(e.id)).scalar_subquery(),
            )
        )
    ).one()
    mark = int(mark or 0)
    current = func.coalesce(select(m.last_event_id).where(m.id == 1).scalar_subquery(), 0)
    folded = _folded(guild_id, first.date(), today)
    actor = func.coalesce(e.actor_id, literal_column("''"))  # NO_ACTOR, inline for GROUP BY
    recent = select(
        actor.label("actor"),
        func.count().label("calls"),
        func.coalesce(func.sum(e.input_tokens), 0).label("tin"),
        func.coalesce(func.sum(e.output_tokens), 0).label("tout"),
    ).where(e.id > current)
    if int(top or 0) - mark <= FEW_UNFOLDED:
        # Walk the few ids after the watermark: the guild and time terms are wrapped so
        # that neither backend's planner takes their indexes (the guild's whole window).
        recent = recent.where(
            e.id > bindparam("mark", mark, literal_execute=True),
            func.coalesce(e.guild_id, e.guild_id) == guild_id,
            func.coalesce(e.created_at, e.created_at) >= first,
        )
    else:  # the job is far behind (just upgraded): the guild's window by its index
        recent = recent.where(e.guild_id == guild_id, e.created_at >= first)
    both = union_all(*folded, recent.group_by(actor)).subquery()
    tokens_in = func.sum(both.c.tin)
    tokens_out = func.sum(both.c.tout)
    calls = func.sum(both.c.calls)
    return (
        select(both.c.actor, calls, tokens_in, tokens_out)
        .group_by(both.c.actor)
        .order_by((tokens_in + tokens_out).desc(), calls.desc(), both.c.actor)
    )


def _day(bucket: datetime) -> date:
    return (bucket if bucket.tzinfo else bucket.replace(tzinfo=UTC)).astimezone(UTC).date()
