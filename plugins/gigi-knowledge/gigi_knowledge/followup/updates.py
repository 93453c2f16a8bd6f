"""Action updates and contradiction resolutions, typed or pressed as outbox buttons.

A button runs the command as the member who pressed it, so these check what that member
may do: the row must be in the channel the command runs in (or one the member can see),
and only the owner, the member who claimed it, or an admin may change an action (an admin
alone one with no owner, as every action of an erased member is). A contradiction note's
earlier decision is superseded only by a member who decided or claimed it, or an admin
(nobody overturns another's decision by recording a contrary one); a note is dismissed by
a party to either decision, or an admin (both decisions stay as they are).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from gigi_core import ToolExecutionError
from gigi_knowledge import phrasing, tables
from gigi_knowledge.search.reads import action_view
from gigi_knowledge.service import now_ms, ready

A, D, C = tables.actions, tables.decisions, tables.contradictions
NO_RECORD = phrasing.NO_RECORD.rstrip(".")


async def _visible(ctx: Any, channel_id: str) -> bool:
    if ctx.channel_id == channel_id:
        return True
    seen = await ctx.visible_channels()
    return seen is not None and channel_id in seen


async def _action(ctx: Any, svc: Any, action_id: str) -> Any:
    async with svc.engine.connect() as conn:
        row = (
            await conn.execute(
                sa.select(A).where(A.c.id == action_id, A.c.guild_id == ctx.guild_id)
            )
        ).first()
    if row is None or not await _visible(ctx, row.channel_id):
        raise ToolExecutionError(f"{NO_RECORD} (no action {action_id} here)")
    mine = ctx.actor.id == row.owner_id or ctx.actor.id in (row.asserted_by or [])
    if not (mine or ctx.actor.is_admin):
        raise ToolExecutionError(
            "only the action's owner, whoever recorded it, or an admin may change it"
            + (" (it has no owner: ask an admin)" if row.owner_id is None else "")
        )
    return row


async def action_update(ctx: Any, id: str, status: str) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    row = await _action(ctx, svc, id)
    t = now_ms()
    values: dict[str, Any] = {"last_status_check_ms": t, "nudged_ms": None}
    if status == "in_progress":
        values["status"] = "open"
        values["staleness_ms"] = t + svc.settings.staleness_days * 86_400_000
    else:
        values["status"] = status
    async with svc.engine.begin() as conn:
        await conn.execute(sa.update(A).where(A.c.id == row.id).values(**values))
        fresh = (await conn.execute(sa.select(A).where(A.c.id == row.id))).first()
    return {"action": action_view(fresh), "updated_by": ctx.actor.id}


async def action_reassign(ctx: Any, id: str, owner: str) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    row = await _action(ctx, svc, id)
    async with svc.engine.begin() as conn:
        await conn.execute(
            sa.update(A)
            .where(A.c.id == row.id)
            .values(owner_id=owner, owner_name=None, last_status_check_ms=now_ms(), nudged_ms=None)
        )
        fresh = (await conn.execute(sa.select(A).where(A.c.id == row.id))).first()
    return {"action": action_view(fresh), "updated_by": ctx.actor.id}


async def _contradiction(ctx: Any, svc: Any, note_id: str, *, supersede: bool) -> Any:
    """The note, if this member may resolve it: an admin; for supersede, a party (decided
    or claimed) to the earlier decision, the one that would be replaced; for dismiss, a
    party to either (dismissing changes no decision)."""
    async with svc.engine.connect() as conn:
        row = (
            await conn.execute(sa.select(C).where(C.c.id == note_id, C.c.guild_id == ctx.guild_id))
        ).first()
    if row is None or not await _visible(ctx, row.channel_id):
        raise ToolExecutionError(f"{NO_RECORD} (no contradiction note {note_id} here)")
    if row.status in ("superseded", "dismissed"):
        raise ToolExecutionError(f"that note was already {row.status}")
    if ctx.actor.is_admin:
        return row
    async with svc.engine.connect() as conn:
        parties, deciders = {}, {}
        for p in await conn.execute(
            sa.select(D.c.id, D.c.decided_by, D.c.asserted_by).where(
                D.c.id.in_((row.earlier_id, row.later_id))
            )
        ):
            deciders[p.id] = set(p.decided_by or [])
            parties[p.id] = deciders[p.id] | set(p.asserted_by or [])
    me = ctx.actor.id
    # Superseding replaces a decision: only who made it (not whoever the model saw say so in
    # a cited message) or an admin. Dismissing changes nothing: a party to either.
    if supersede and me not in deciders.get(row.earlier_id, set()):
        raise ToolExecutionError(
            "only a member who made the earlier decision, or an admin, may mark it superseded"
        )
    if not supersede and not any(me in p for p in parties.values()):
        raise ToolExecutionError(
            "only a member who decided or claimed one of the two decisions, or an admin, "
            "may dismiss this note"
        )
    return row


async def decision_supersede(ctx: Any, id: str) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    note = await _contradiction(ctx, svc, id, supersede=True)
    async with svc.engine.begin() as conn:
        await conn.execute(
            sa.update(D)
            .where(D.c.id == note.earlier_id, D.c.status == "active")
            .values(status="superseded", superseded_by=note.later_id)
        )
        await conn.execute(
            sa.update(C).where(C.c.id == note.id).values(status="superseded", updated_ms=now_ms())
        )
    svc.caches.forget(ctx.guild_id)  # the earlier decision is no longer a candidate
    return {"superseded": note.earlier_id, "by": note.later_id}


async def decision_dismiss(ctx: Any, id: str) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    note = await _contradiction(ctx, svc, id, supersede=False)
    async with svc.engine.begin() as conn:
        await conn.execute(
            sa.update(C).where(C.c.id == note.id).values(status="dismissed", updated_ms=now_ms())
        )
    return {"dismissed": note.id, "decisions": [note.earlier_id, note.later_id]}
