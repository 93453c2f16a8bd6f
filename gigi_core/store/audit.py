"""Audit events: metadata only. The signature has no place for argument values or results.

Rows go through the database's batching writer (``gigi_core.store.writer``), so rows of
concurrent calls share a commit. ``record`` waits for the commit; ``queue`` does not (the
tool path uses it for read-only calls and refusals, which changed nothing: their row
commits with the writer's next batch, a few milliseconds later). Readers drain the writer
first, so they see every row queued before they asked. A queued row that fails turns the
next ones into awaited writes until one lands (so does a failed awaited row): from the
first failure the writer reports, reads fail closed while the log cannot be written.
"""

from __future__ import annotations

import asyncio
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
        self.failed_rows = 0  # queued rows the writer could not store since start-up
        self._failing = False  # the last queued row failed: the next ones are awaited

    async def record(self, record: AuditRecord) -> None:
        """Store one row and wait for its commit; a failed write raises, and reads fail
        closed from then on too, until a row lands."""
        try:
            await self.db.writer.write(AuditWrite([audit_row(record)]))
        except Exception:
            self._failing = True
            raise

    async def queue(self, record: AuditRecord) -> None:
        """Store one row with the writer's next batch, without waiting for it.

        A failed write is logged by the writer with its exception (the engines hide
        statement values, so no row's values) and counted in ``failed_rows``; until a row
        lands again, rows are awaited like ``record``'s, so the caller sees the failure.
        After the database was closed the row cannot be written and that is logged.
        """
        if self._failing:
            await self.record(record)  # raises while the log still cannot be written
            self._failing = False
            return
        future = self.db.writer.submit(AuditWrite([audit_row(record)]))
        if future is None:
            log.warning("an audit row (%s) arrived after the database was closed", record.kind)
        else:
            future.add_done_callback(self._settled)

    def _settled(self, future: asyncio.Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            self.failed_rows += 1
            self._failing = True

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
