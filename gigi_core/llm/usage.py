"""Usage events: one row per provider call, success or failure, metadata only.

The record's fields are the whole story: there is no parameter for a prompt, a completion,
a provider body or a key, so none can be stored by accident. Events are written through
the batching writer (group commit with the run journal), and the same transaction adds
them to the rollup (``llm_usage_rollup``, per UTC day and hour) that reports read:
O(days), not O(calls).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, select, union_all, update

from gigi_core.llm.budget_alerts import Alert, claim
from gigi_core.llm.budget_leases import settle
from gigi_core.llm.records import LlmConfigError, UsageRow
from gigi_core.store.llm_tables import LlmCredential, LlmUsageEvent, LlmUsageRollup
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

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
    created_at: datetime | None = None  # now, unless a test or an import says otherwise
    failover_step: int | None = None  # which failover entry made the call (None: the profile)
    failover_reason: str | None = None  # the error class that moved the call on to it

    def with_usage(self, usage: Usage) -> UsageRecord:
        return replace(
            self,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cached_tokens=usage.cached_input_tokens,
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


TOKENS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")
KEYS = ("provider", "model", "purpose", "status")
_EVENTS = LlmUsageEvent.__table__
_ROLLUP = LlmUsageRollup.__table__
_INSERT_EVENTS = insert(_EVENTS)  # built once: a statement per write pays its cache key
_CREDENTIALS = LlmCredential.__table__
_UPSERTS: dict[str, Any] = {}


def _upsert(dialect: str) -> Any:
    """``INSERT .. ON CONFLICT DO UPDATE`` adding to the day's sums (SQLite and PostgreSQL)."""
    statement = _UPSERTS.get(dialect)
    if statement is None:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        base = dialect_insert(_ROLLUP)
        added = {c: _ROLLUP.c[c] + base.excluded[c] for c in ("calls", *TOKENS)}
        statement = _UPSERTS[dialect] = base.on_conflict_do_update(
            index_elements=["guild_id", "period", "bucket", *KEYS], set_=added
        )
    return statement


def event_row(record: UsageRecord) -> dict[str, Any]:
    row = dict(record.__dict__)  # flat fields only: asdict's deep copy cost 0.1 ms a call
    if row["created_at"] is None:
        row["created_at"] = utcnow()
    return row


def utc(when: datetime) -> datetime:
    """Aware UTC (SQLite hands back naive UTC wall-clock times; a naive ``since`` is UTC)."""
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def starts(when: datetime) -> tuple[datetime, datetime]:
    """The start of ``when``'s UTC day and of its UTC hour."""
    hour = utc(when).replace(minute=0, second=0, microsecond=0)
    return hour.replace(hour=0), hour


def rollup(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows' additions to ``llm_usage_rollup``: per guild, day or hour, and key."""
    sums: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        if row["guild_id"] is None:  # in no guild's report
            continue
        day, hour = starts(row["created_at"])
        for period, bucket in (("day", day), ("hour", hour)):
            key = (row["guild_id"], period, bucket, *(row[k] for k in KEYS))
            entry = sums.get(key)
            if entry is None:
                entry = sums[key] = {
                    "guild_id": key[0],
                    "period": period,
                    "bucket": bucket,
                    **dict(zip(KEYS, key[3:], strict=True)),
                    "calls": 0,
                    **dict.fromkeys(TOKENS, 0),
                }
            entry["calls"] += 1
            for t in TOKENS:
                entry[t] += row[t] or 0
    return list(sums.values())


def _ceil(when: datetime, step: timedelta, start: datetime) -> datetime:
    return start if when == start else start + step


@dataclass
class UsageWrite:
    """One transaction: events, their rollup and the credential outcomes that changed."""

    rows: list[dict[str, Any]]
    outcomes: list[dict[str, Any]]
    #: Budget holds settled with this usage (``Budgets.settle_rows``).
    settles: list[dict[str, Any]] = field(default_factory=list)
    #: The alert thresholds this write's settles claimed: posted once it commits.
    alerts: list[Alert] = field(default_factory=list)
    #: The writes a combined write stands for: each gets back the alerts its settles claimed.
    parts: list[UsageWrite] = field(default_factory=list)

    def __call__(self, conn: Connection) -> None:
        conn.execute(_INSERT_EVENTS, self.rows)
        if self.settles:
            due = settle(conn, self.settles)
            self._claimed(claim(conn, self.settles, due))
        sums = rollup(self.rows)
        if sums:  # one executemany: a row per day and per hour of each key
            conn.execute(_upsert(conn.dialect.name), sums)
        c = _CREDENTIALS.c
        for outcome in self.outcomes:  # rare: only when the credential's outcome changed
            conn.execute(
                update(_CREDENTIALS)
                .where(c.id == outcome["id"], c.revoked_at.is_(None))
                .values(**outcome["values"])
            )

    @staticmethod
    def combine(writes: list[UsageWrite]) -> UsageWrite:
        """Several calls' usage as one write: one insert and one upsert for all."""
        return UsageWrite(
            [row for w in writes for row in w.rows],
            [o for w in writes for o in w.outcomes],
            [s for w in writes for s in w.settles],
            parts=list(writes),
        )

    def _claimed(self, claimed: list[tuple[int, Alert]]) -> None:
        """Hands each claimed alert to the write whose settle row claimed it (a retried
        transaction starts over)."""
        for part in (self, *self.parts):
            part.alerts = []
        owners: list[UsageWrite] = []
        for part in self.parts or [self]:
            owners.extend([part] * len(part.settles))
        for index, alert in claimed:
            owners[index].alerts.append(alert)


def usage_write(
    rows: Sequence[dict[str, Any]], outcome: dict[str, Any] | None = None
) -> UsageWrite:
    """The write for ``rows`` and (when it changed) one credential's outcome."""
    return UsageWrite(list(rows), [outcome] if outcome is not None else [])


class UsageLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, record: UsageRecord) -> None:
        """Store one event (and its rollup) and wait for the commit."""
        await self.db.writer.write(usage_write([event_row(record)]))

    async def summary(self, guild_id: str, since: datetime | None = None) -> list[UsageRow]:
        """Counts and token sums for one guild, by provider, model, purpose and status.

        Whole UTC days from the rollup; after ``since``, the whole hours of its partial
        first day from the hourly rollup, and the events of its first partial hour.
        """
        await self.db.writer.drain()  # events queued behind a reply count too
        r = LlmUsageRollup
        columns = [r.__table__.c[k] for k in (*KEYS, "calls", *TOKENS)]
        days = select(*columns).where(r.guild_id == guild_id, r.period == "day")
        parts = [days]
        if since is not None:
            since = utc(since)
            day, hour = starts(since)
            first_day = _ceil(since, timedelta(days=1), day)
            first_hour = _ceil(since, timedelta(hours=1), hour)
            parts[0] = days.where(r.bucket >= first_day)
            if first_hour < first_day:
                parts.append(
                    select(*columns).where(
                        r.guild_id == guild_id,
                        r.period == "hour",
                        r.bucket >= first_hour,
                        r.bucket < first_day,
                    )
                )
            if since < first_hour:
                e = LlmUsageEvent
                parts.append(
                    select(
                        e.provider,
                        e.model,
                        e.purpose,
                        e.status,
                        func.count().label("calls"),
                        *(func.coalesce(func.sum(e.__table__.c[t]), 0).label(t) for t in TOKENS),
                    )
                    .where(
                        e.guild_id == guild_id,
                        e.created_at >= since,
                        e.created_at < first_hour,
                    )
                    .group_by(e.provider, e.model, e.purpose, e.status)
                )
        both = (union_all(*parts) if len(parts) > 1 else parts[0]).subquery()
        keys = [both.c[k] for k in KEYS]
        query = (
            select(*keys, *(func.sum(both.c[c]) for c in ("calls", *TOKENS)))
            .group_by(*keys)
            .order_by(*keys)
        )
        async with self.db.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [UsageRow(*(r[:4]), *(int(v or 0) for v in r[4:])) for r in rows]

    async def summary_from_events(
        self, guild_id: str, since: datetime | None = None
    ) -> list[UsageRow]:
        """The same report computed from every event (the pre-rollup query; for checks)."""
        await self.db.writer.drain()
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
        await self.db.writer.drain()
        query = select(LlmUsageEvent).order_by(LlmUsageEvent.id.desc()).limit(limit)
        if guild_id is not None:
            query = query.where(LlmUsageEvent.guild_id == guild_id)
        async with self.db.session() as s:
            return [
                {c.name: getattr(r, c.name) for c in LlmUsageEvent.__table__.columns}
                for r in await s.scalars(query)
            ]
