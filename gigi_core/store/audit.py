"""Audit events: metadata only. The signature has no place for argument values or results.

Rows go through the database's batching writer (``gigi_core.store.writer``), so rows of
concurrent calls share a commit. ``record`` waits for the commit; ``queue`` does not (the
tool path uses it for read-only calls and refusals, which changed nothing: their row
commits with the writer's next batch, a few milliseconds later). Readers drain the writer
first, so they see every row queued before they asked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select

from gigi_core.store.db import Database
from gigi_core.store.tables import AuditEvent, utcnow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

log = logging.getLogger(__name__)
_INSERT = insert(AuditEvent.__table__)


@dataclass(frozen=True)
class AuditRecord:
    kind: str
    status: str
    actor_id: str | None = None
    guild_id: str | None = None
    channel_id: str | None = None
    action: str | None = None
    capability: str | None = None
    decision: str | None = None
    reason_code: str | None = None
    duration_ms: float | None = None
    run_id: str | None = None
    step_index: int | None = None
    tool_kind: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    termination_reason: str | None = None


@dataclass
class AuditWrite:
    """One insert of audit rows for the writer; rows are stamped when made, not at commit."""

    rows: list[dict[str, Any]]

    def __call__(self, conn: Connection) -> None:
        conn.execute(_INSERT, self.rows)


def audit_row(record: AuditRecord) -> dict[str, Any]:
    return {"created_at": utcnow(), **vars(record)}  # flat: cheaper than asdict


class AuditLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, record: AuditRecord) -> None:
        """Store one row and wait for its commit; a failed write raises."""
        await self.db.writer.write(AuditWrite([audit_row(record)]))

    def queue(self, record: AuditRecord) -> None:
        """Store one row with the writer's next batch, without waiting for it.

        A failed write is logged by the writer with its exception (the engines hide
        statement values, so no row's values);
        after the database was closed the row cannot be written and that is logged too.
        """
        if self.db.writer.submit(AuditWrite([audit_row(record)])) is None:
            log.warning("an audit row (%s) arrived after the database was closed", record.kind)

    async def recent(self, guild_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        await self.db.writer.drain()  # rows queued before this read are in it
        query = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(limit)
        if guild_id is not None:
            query = query.where(AuditEvent.guild_id == guild_id)
        async with self.db.session() as s:
            rows = await s.scalars(query)
            return [_row(r) for r in rows]


def _row(r: AuditEvent) -> dict[str, Any]:
    out = {c: getattr(r, c) for c in AuditRecord.__dataclass_fields__}
    out["id"] = r.id
    created: datetime = r.created_at
    out["created_at"] = created.isoformat()
    return out
