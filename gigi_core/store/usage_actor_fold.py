"""Folds usage events into the per-member daily rollup, and keeps it right when members go.

The job ``gigi.usage_members_fold`` calls ``fold_usage_by_actor`` every few minutes: each
batch sums the events after the watermark per guild, UTC day and member, adds them to
``llm_usage_actor_days`` and advances the watermark in the same transaction, so a batch
that fails midway leaves both as they were and the next run folds the same events once.
The weekly rollup ``llm_usage_actor_weeks`` is kept by the database: triggers of revision
kernel_0024 apply every change of a day row to its week in the same transaction, so no
path here writes weeks (and a process of the previous version cannot leave them behind).

Events commit in id order within one writer, but two processes can commit out of order, so
a batch stops before the first event younger than ``settle_seconds``: an event still in an
open transaction then is not passed over.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Date, cast, delete, func, insert, literal_column, select, update

from gigi_core.store.llm_tables import LlmUsageEvent
from gigi_core.store.usage_actor_tables import NO_ACTOR, LlmUsageActorDay, LlmUsageActorWatermark

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from gigi_core.store.db import Database

BATCH = 50_000
SUMS = ("calls", "input_tokens", "output_tokens")
_DAYS = LlmUsageActorDay.__table__
_MARK = LlmUsageActorWatermark.__table__


def day_of(column: Any, dialect: str) -> Any:
    """The UTC day of a stored event time, as SQL (SQLite keeps UTC wall-clock text)."""
    if dialect == "postgresql":
        return cast(func.timezone("UTC", column), Date)
    return func.date(column)


def monday(day: date) -> date:
    """The Monday starting ``day``'s week: the ``week`` of its weekly rollup row."""
    return day - timedelta(days=day.weekday())


def _insert(dialect: str) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    return dialect_insert(_DAYS)


def _adding(statement: Any) -> Any:
    """``statement`` with ``ON CONFLICT`` adding its sums to the row already there."""
    return statement.on_conflict_do_update(
        index_elements=["guild_id", "day", "actor_id"],
        set_={c: _DAYS.c[c] + statement.excluded[c] for c in SUMS},
    )


async def hold_watermark(s: AsyncSession) -> int:
    """Takes the watermark row's write lock for this transaction and returns it.

    A fold and a privacy rewrite both begin here, so one waits for the other to commit and
    then reads what it wrote (SQLite: the transaction's write lock; PostgreSQL: the row).
    """
    touched = await s.execute(
        update(_MARK).where(_MARK.c.id == 1).values(last_event_id=_MARK.c.last_event_id)
    )
    if not touched.rowcount:  # a store created without kernel_0023's row
        await s.execute(insert(_MARK).values(id=1, last_event_id=0))
        return 0
    return int(await s.scalar(select(_MARK.c.last_event_id).where(_MARK.c.id == 1)) or 0)


async def fold_batch(db: Database, *, batch: int = BATCH, settle_seconds: float = 60.0) -> int:
    """Folds up to ``batch`` events after the watermark; returns how many ids it passed."""
    e = LlmUsageEvent.__table__
    async with db.session() as s:
        mark = await hold_watermark(s)
        ids = select(e.c.id).where(e.c.id > mark).order_by(e.c.id).limit(batch).subquery()
        last = await s.scalar(select(func.max(ids.c.id)))
        if last is None:
            return 0
        cutoff = datetime.now(UTC) - timedelta(seconds=settle_seconds)
        young = await s.scalar(
            select(func.min(e.c.id)).where(e.c.id > mark, e.c.id <= last, e.c.created_at >= cutoff)
        )
        if young is not None:
            last = young - 1
        if last <= mark:
            return 0
        dialect = s.get_bind().dialect.name
        day = day_of(e.c.created_at, dialect)
        actor = func.coalesce(e.c.actor_id, literal_column("''"))  # NO_ACTOR, inline for GROUP BY
        sums = (
            select(
                e.c.guild_id,
                day,
                actor,
                func.count(),
                func.coalesce(func.sum(e.c.input_tokens), 0),
                func.coalesce(func.sum(e.c.output_tokens), 0),
            )
            .where(e.c.id > mark, e.c.id <= last, e.c.guild_id.is_not(None))
            .group_by(e.c.guild_id, day, actor)
        )
        columns = ["guild_id", "day", "actor_id", *SUMS]
        await s.execute(_adding(_insert(dialect).from_select(columns, sums)))
        await s.execute(update(_MARK).where(_MARK.c.id == 1).values(last_event_id=last))
    return last - mark


async def fold_usage_by_actor(
    db: Database,
    *,
    batch: int = BATCH,
    max_batches: int = 20,
    settle_seconds: float = 60.0,
) -> int:
    """Folds the usage events after the watermark into the per-member daily rollup (and so
    the weekly one), in transactions of ``batch`` events, at most ``max_batches``; returns
    the ids passed."""
    await db.writer.drain()  # usage queued in this process lands first
    passed = 0
    for _ in range(max_batches):
        step = await fold_batch(db, batch=batch, settle_seconds=settle_seconds)
        if not step:
            break
        passed += step
    return passed


async def _add(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await s.execute(_adding(_insert(s.get_bind().dialect.name)), rows)


async def rename_actor(s: AsyncSession, user_id: str, guild_id: str | None, pseudonym: str) -> int:
    """A member's rows (in one guild, or everywhere) merge into the pseudonym's rows, as
    their usage events take the pseudonym. Call after ``hold_watermark``."""
    d = _DAYS.c
    mine = (
        (d.actor_id == user_id)
        if guild_id is None
        else ((d.actor_id == user_id) & (d.guild_id == guild_id))
    )
    rows = (await s.execute(select(d.guild_id, d.day, *(d[c] for c in SUMS)).where(mine))).all()
    await _add(
        s,
        [
            {"guild_id": g, "day": day, "actor_id": pseudonym, **dict(zip(SUMS, v, strict=True))}
            for g, day, *v in rows
        ],
    )
    await s.execute(delete(_DAYS).where(mine))
    return len(rows)


async def move_run_usage(s: AsyncSession, request_id: str, user_id: str, alias: str) -> None:
    """The folded events of one request move from ``user_id`` to ``alias`` (a deleting
    run's own calls, pseudonymised once it has finished). Call after ``hold_watermark``."""
    mark = int(await s.scalar(select(_MARK.c.last_event_id).where(_MARK.c.id == 1)) or 0)
    e = LlmUsageEvent.__table__
    events = await s.execute(
        select(e.c.guild_id, e.c.created_at, e.c.input_tokens, e.c.output_tokens).where(
            e.c.request_id == request_id,
            e.c.actor_id == user_id,
            e.c.guild_id.is_not(None),
            e.c.id <= mark,
        )
    )
    moved = _per_day(events.all())
    if not moved:
        return
    d = _DAYS.c
    for (guild, day), sums in moved.items():
        key = (d.guild_id == guild) & (d.day == day) & (d.actor_id == user_id)
        await s.execute(update(_DAYS).where(key).values({c: d[c] - sums[c] for c in SUMS}))
        await s.execute(delete(_DAYS).where(key, d.calls <= 0))
    await _add(
        s,
        [{"guild_id": g, "day": day, "actor_id": alias, **v} for (g, day), v in moved.items()],
    )


def _per_day(events: Iterable[Any]) -> dict[tuple[str, date], dict[str, int]]:
    sums: dict[tuple[str, date], dict[str, int]] = defaultdict(lambda: dict.fromkeys(SUMS, 0))
    for guild, created, tokens_in, tokens_out in events:
        when = created if created.tzinfo else created.replace(tzinfo=UTC)
        entry = sums[(guild, when.astimezone(UTC).date())]
        entry["calls"] += 1
        entry["input_tokens"] += tokens_in or 0
        entry["output_tokens"] += tokens_out or 0
    return dict(sums)


async def purge_guild_actors(s: AsyncSession, guild_id: str) -> int:
    """A purged guild's days keep their sums with no member, as its usage events keep
    their billing rows with ``actor_id`` NULL. Call after ``hold_watermark``."""
    d = _DAYS.c
    totals = (
        await s.execute(
            select(d.day, *(func.sum(d[c]) for c in SUMS))
            .where(d.guild_id == guild_id)
            .group_by(d.day)
        )
    ).all()
    await s.execute(delete(_DAYS).where(d.guild_id == guild_id))
    await _add(
        s,
        [
            {
                "guild_id": guild_id,
                "day": day,
                "actor_id": NO_ACTOR,
                **{c: int(v or 0) for c, v in zip(SUMS, values, strict=True)},
            }
            for day, *values in totals
        ],
    )
    return len(totals)
