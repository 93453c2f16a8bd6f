"""``/knowledge decisions|actions``: structured reads, scoped to the asking channel.

Asked outside a channel (a DM, a shell), personal mode: only the asker's own decisions and
actions in the channels they may read now (from the surface serving the guild; nothing when
no surface here can tell). Never another channel's rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables
from gigi_knowledge.phrasing import NO_RECORD
from gigi_knowledge.search.timeparse import parse_since
from gigi_knowledge.service import ready
from gigi_knowledge.source_refs import iso

D, A, C = tables.decisions, tables.actions, tables.contradictions


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


async def readable_now(kernel: Any, guild_id: str, user_id: str) -> frozenset[str] | None:
    """The channels the member may read now, from the surface serving the guild; None when
    no surface here can tell (a shell, a worker) or they are no longer a member."""
    view = await kernel.outbox.member(guild_id, user_id)
    return None if view is None else await view.visible_channels()


NOT_READABLE = (
    "I'm afraid I cannot tell which channels you may read from here; "
    "ask me in the server, or in a channel."
)


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
        readable = await readable_now(ctx.kernel, ctx.guild_id, ctx.actor.id)
        if readable is None:
            return {"scope": "personal", "decisions": [], "note": NOT_READABLE}
        where.append(D.c.channel_id.in_(sorted(readable)))
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
    out: dict[str, Any] = {
        "scope": "personal" if personal else "channel",
        "decisions": found,
        "note": None if found else NO_RECORD,
    }
    if not personal:
        out["contradictions"] = await unsettled(svc, ctx.guild_id, ctx.channel_id)
    return out


async def unsettled(svc: Any, guild_id: str, channel_id: str) -> list[dict[str, Any]]:
    """The channel's contradiction notes still to settle (open, or posted with buttons),
    newest first: each note's id (for `/knowledge decision supersede|dismiss`) and its two
    decisions."""
    d1, d2 = D.alias("d1"), D.alias("d2")
    query = (
        sa.select(
            C.c.id, C.c.status, C.c.earlier_id, C.c.later_id,
            d1.c.summary.label("earlier"), d2.c.summary.label("later"),
        )
        .join(d1, d1.c.id == C.c.earlier_id)
        .join(d2, d2.c.id == C.c.later_id)
        .where(
            C.c.guild_id == guild_id, C.c.channel_id == channel_id,
            C.c.status.in_(("open", "posted")),
        )
        .order_by(C.c.created_ms.desc(), C.c.id)
        .limit(20)
    )  # fmt: skip
    async with svc.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return [
        {
            "id": r.id,
            "status": r.status,
            "earlier": {"id": r.earlier_id, "summary": r.earlier},
            "later": {"id": r.later_id, "summary": r.later},
        }
        for r in rows
    ]


async def actions(
    ctx: Any, status: str = "open", owner: str | None = None, limit: int = 10
) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    where = [A.c.guild_id == ctx.guild_id]
    personal = ctx.channel_id is None
    if personal:
        readable = await readable_now(ctx.kernel, ctx.guild_id, ctx.actor.id)
        if readable is None:
            return {"scope": "personal", "actions": [], "note": NOT_READABLE}
        where += [A.c.owner_id == ctx.actor.id, A.c.channel_id.in_(sorted(readable))]
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
        "note": None if found else NO_RECORD,
    }
