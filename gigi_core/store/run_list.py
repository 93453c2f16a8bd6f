"""A read port for admin surfaces (the web dashboard): a guild's recent agent runs, newest
first, as metadata only (status, why it ended, what it used, when). One run's steps are
``kernel.agent.trace(run_id)``; this lists which runs there are without importing the agent
runtime or its tables into a plugin."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select

from gigi_core.errors import ConfigError
from gigi_core.store.agent_tables import AgentRun
from gigi_core.store.db import Database

RUN_STATUSES = ("running", "awaiting_confirmation", "done", "failed", "cancelled")
MAX_RUNS = 200


@dataclass(frozen=True)
class RunSummary:
    """One agent run's metadata: never its prompt, messages, arguments or results."""

    id: str
    kind: str
    status: str
    termination_reason: str | None
    actor_id: str
    channel_id: str | None
    steps: int
    tool_calls: int
    llm_calls: int
    tokens: int
    created_at: datetime
    finished_at: datetime | None


async def recent_runs(
    db: Database, guild_id: str, *, status: str | None = None, limit: int = 50
) -> list[RunSummary]:
    """The newest ``limit`` runs of ``guild_id`` (served by ``ix_agent_runs_guild_created``)."""
    if status is not None and status not in RUN_STATUSES:
        raise ConfigError(
            f"unknown run status {status!r}", hint=f"use one of {', '.join(RUN_STATUSES)}"
        )
    if not 1 <= limit <= MAX_RUNS:
        raise ConfigError(f"a run list holds 1 to {MAX_RUNS} runs", hint="pass a smaller limit")
    r = AgentRun
    query = (
        select(r)
        .where(r.guild_id == guild_id)
        .order_by(r.created_at.desc(), r.id.desc())
        .limit(limit)
    )
    if status is not None:
        query = query.where(r.status == status)
    await db.writer.drain()  # runs written a moment ago by this process count too
    async with db.session() as s:
        found = (await s.scalars(query)).all()
    return [
        RunSummary(
            id=row.id,
            kind=row.kind,
            status=row.status,
            termination_reason=row.termination_reason,
            actor_id=row.actor_id,
            channel_id=row.channel_id,
            steps=int(row.steps_used or 0),
            tool_calls=int(row.tool_calls_used or 0),
            llm_calls=int(row.llm_calls_used or 0),
            tokens=int(row.tokens_used or 0),
            created_at=_aware(row.created_at),
            finished_at=_aware(row.finished_at) if row.finished_at is not None else None,
        )
        for row in found
    ]


def _aware(value: datetime) -> datetime:
    """SQLite hands back naive UTC; PostgreSQL an aware time in the session's zone."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
