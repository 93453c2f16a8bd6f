"""``/knowledge decisions|actions``: structured reads, scoped to the asking channel.

Asked outside a channel (a DM, a shell), personal mode: only the asker's own decisions and
actions across the guild. Never another channel's rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables
from gigi_knowledge.refs import iso
from gigi_knowledge.service import ready
from gigi_knowledge.timeparse import parse_since

D, A = tables.decisions, tables.actions


def member_in(dialect: str, column: Any, value: str) -> Any:
    if dialect == "postgresql":
        clause = sa.text(
            f"EXISTS (SELECT 1 FROM json_array_elements_text({column.table.name}.{column.name}) AS x "
            "WHERE x = :v_json)"
        )
    else:
        clause = sa.text(
            f"EXISTS (SELECT 1 FROM json_each({column.table.name}.{column.name}) WHERE value = :v_json)"
        )
    return clause.bindparams(v_json=value)


def decision_view(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "channel_id": row.channel_id,
        "summary": row.summary,
        "rationale": row.rationale,
        "decided_by": row.decided_by,
        "claimed_by": row.asserted_by,
        "decided_at": iso(row.decided_ms),
        "status": row.status,
        "superseded_by": row.superseded_by,
        "confidence": round(row.confidence, 2),
        "tags": row.tags,
        "source_ref": row.source_ref,
    }


def action_view(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "channel_id": row.channel_id,
        "description": row.description,
        "owner_id": row.owner_id,
        "owner_name": row.owner_name,
        "deadline": iso(row.deadline_ms),
        "status": row.status,
        "confidence": round(row.confidence, 2),
        "tags": row.tags,
        "source_ref": row.source_ref,
        "created_at": iso(row.created_ms),
    }


async def decisions(
    ctx: Any,
    status: str = "active",
    owner: str | None = None,
    tag: str | None = None,
    since: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    where = [D.c.guild_id == ctx.guild_id]
    personal = ctx.channel_id is None
    if personal:
        owner = ctx.actor.id
    else:
        where.append(D.c.channel_id == ctx.channel_id)
    if status != "all":
        where.append(D.c.status == status)
    if owner:
        where.append(member_in(svc.dialect, D.c.decided_by, owner))
    if since:
        when = parse_since(since, datetime.now(UTC))
        where.append(D.c.decided_ms >= int(when.timestamp() * 1000))
    query = sa.select(D).where(*where).order_by(D.c.decided_ms.desc(), D.c.id)
    async with svc.engine.connect() as conn:
        rows = (await conn.execute(query.limit(limit if not tag else 500))).all()
    if tag:
        rows = [r for r in rows if tag.lower() in {t.lower() for t in r.tags or []}][:limit]
    found = [decision_view(r) for r in rows]
    return {
        "scope": "personal" if personal else "channel",
        "decisions": found,
        "note": None if found else "I'm afraid I have no record of that particular matter.",
    }


async def actions(
    ctx: Any, status: str = "open", owner: str | None = None, limit: int = 10
) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    where = [A.c.guild_id == ctx.guild_id]
    personal = ctx.channel_id is None
    if personal:
        where.append(A.c.owner_id == ctx.actor.id)
    else:
        where.append(A.c.channel_id == ctx.channel_id)
        if owner:
            where.append(A.c.owner_id == owner)
    if status != "all":
        where.append(A.c.status == status)
    query = (
        sa.select(A)
        .where(*where)
        .order_by(sa.func.coalesce(A.c.deadline_ms, A.c.staleness_ms), A.c.id)
        .limit(limit)
    )
    async with svc.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    found = [action_view(r) for r in rows]
    return {
        "scope": "personal" if personal else "channel",
        "actions": found,
        "note": None if found else "I'm afraid I have no record of that particular matter.",
    }
