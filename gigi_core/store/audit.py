"""Audit events: metadata only. The signature has no place for argument values or results."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from gigi_core.store.db import Database
from gigi_core.store.tables import AuditEvent


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


class AuditLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, record: AuditRecord) -> None:
        async with self.db.session() as s:
            s.add(AuditEvent(**asdict(record)))

    async def recent(self, guild_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
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
