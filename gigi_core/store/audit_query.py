"""A read port over the audit log: filter by guild, actor, action, outcome and time, newest
first, in keyset pages. Every surface (the CLI, the web dashboard) reads this one view, and
the rows it returns are the log's metadata columns only (the log holds nothing else)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import or_, select

from gigi_core.errors import ConfigError
from gigi_core.store.db import Database
from gigi_core.store.tables import AuditEvent

MAX_PAGE = 500
AUDIT_COLUMNS = (
    "id",
    "created_at",
    "kind",
    "status",
    "actor_id",
    "guild_id",
    "channel_id",
    "action",
    "capability",
    "decision",
    "reason_code",
    "duration_ms",
    "run_id",
    "tool_kind",
    "input_tokens",
    "output_tokens",
    "termination_reason",
)


@dataclass(frozen=True)
class AuditFilter:
    """What to read; ``action`` matches the row's kind (``grant.add``) or its action
    (``memory.count``), ``outcome`` its status or decision (``ok``, ``deny``)."""

    guild_id: str | None = None
    actor_id: str | None = None
    action: str | None = None
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    before_id: int | None = None  # keyset cursor: rows older than this id
    limit: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise ConfigError(f"audit page size (limit) must be between 1 and {MAX_PAGE}")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                object.__setattr__(self, name, value.replace(tzinfo=UTC))


@dataclass(frozen=True)
class AuditPage:
    """One page of rows (newest first) and the cursor of the next, None on the last page."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    next_before_id: int | None = None


async def query_audit(db: Database, wanted: AuditFilter) -> AuditPage:
    """The rows matching ``wanted``; reads drain the audit writer first, so a row recorded
    before the call is in the answer."""
    await db.writer.drain()
    a = AuditEvent
    query = select(*(a.__table__.c[c] for c in AUDIT_COLUMNS)).order_by(a.id.desc())
    if wanted.guild_id is not None:
        query = query.where(a.guild_id == wanted.guild_id)
    if wanted.actor_id is not None:
        query = query.where(a.actor_id == wanted.actor_id)
    if wanted.action is not None:
        query = query.where(or_(a.kind == wanted.action, a.action == wanted.action))
    if wanted.outcome is not None:
        query = query.where(or_(a.status == wanted.outcome, a.decision == wanted.outcome))
    if wanted.since is not None:
        query = query.where(a.created_at >= wanted.since)
    if wanted.until is not None:
        query = query.where(a.created_at < wanted.until)
    if wanted.before_id is not None:
        query = query.where(a.id < wanted.before_id)
    query = query.limit(wanted.limit + 1)
    async with db.engine.connect() as conn:
        found = (await conn.execute(query)).mappings().all()
    rows = [_plain(r) for r in found[: wanted.limit]]
    more = len(found) > wanted.limit
    return AuditPage(rows=rows, next_before_id=rows[-1]["id"] if more and rows else None)


def _plain(row: Any) -> dict[str, Any]:
    out = dict(row)
    created: datetime = out["created_at"]
    if created.tzinfo is None:  # SQLite hands back naive UTC
        created = created.replace(tzinfo=UTC)
    out["created_at"] = created.isoformat()
    return out
