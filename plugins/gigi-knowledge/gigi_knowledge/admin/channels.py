"""``/knowledge enable|disable|status|context``: channel opt-in and context.

The channel's observation state (active / paused / secure) is the kernel's
(``/gigi channel pause|resume|secure``); status shows it beside the knowledge switch.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import sqlalchemy as sa

from gigi_core import ToolExecutionError
from gigi_knowledge import tables
from gigi_knowledge.extract import models
from gigi_knowledge.service import ChannelInfo, context_line, now_ms, ready
from gigi_knowledge.source_refs import iso

C = tables.channels


def _insert(dialect: str) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(C)


async def _row(svc: Any, guild_id: str, channel_id: str) -> Any:
    async with svc.engine.connect() as conn:
        return (
            await conn.execute(
                sa.select(C).where(C.c.guild_id == guild_id, C.c.channel_id == channel_id)
            )
        ).first()


async def _upsert(svc: Any, guild_id: str, channel_id: str, values: dict[str, Any]) -> Any:
    t = now_ms()
    base = {
        "guild_id": guild_id,
        "channel_id": channel_id,
        "enabled": False,
        "deleted": False,
        "timezone": "UTC",
        "locale": "en",
        "joined_ms": t,
        "updated_ms": t,
        "tags": [],
        "stakeholders": [],
        "related_channels": [],
    }
    stmt = _insert(svc.dialect).values(**(base | values | {"updated_ms": t}))
    stmt = stmt.on_conflict_do_update(
        index_elements=["guild_id", "channel_id"], set_=values | {"updated_ms": t}
    )
    async with svc.engine.begin() as conn:
        await conn.execute(stmt)
    row = await _row(svc, guild_id, channel_id)
    svc.set_channel(
        guild_id,
        channel_id,
        ChannelInfo(True, row.timezone, context_line(row), row.parent_id)
        if row.enabled and not row.deleted
        else None,
    )
    return row


async def record_parent(svc: Any, guild_id: str, channel_id: str, parent_id: str) -> None:
    """Keep a thread's parent (seen on its messages) for the jobs that post there later."""
    async with svc.engine.begin() as conn:
        await conn.execute(
            sa.update(C)
            .where(C.c.guild_id == guild_id, C.c.channel_id == channel_id)
            .values(parent_id=parent_id)
        )


def check_timezone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolExecutionError(
            f"timezone: {name!r} is not a time zone; use an IANA name such as Europe/Paris"
        ) from None
    return name


async def enable(ctx: Any, channel: str, timezone: str | None = None) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    values: dict[str, Any] = {"enabled": True, "deleted": False, "updated_by": ctx.actor.id}
    if timezone:
        values["timezone"] = check_timezone(timezone)
    row = await _upsert(svc, ctx.guild_id, channel, values)
    state = await ctx.kernel.channels.get(ctx.guild_id, channel)
    return {
        "channel": channel,
        "knowledge": "on",
        "state": state,
        "timezone": row.timezone,
        "note": "new messages are read in memory, knowledge is extracted and the text discarded"
        + (
            ""
            if state == "active"
            else f"; the channel is {state}, so nothing is read until it is resumed"
        ),
        **await models.readiness(ctx.kernel, ctx.guild_id),
    }


async def disable(ctx: Any, channel: str) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    await _upsert(svc, ctx.guild_id, channel, {"enabled": False, "updated_by": ctx.actor.id})
    return {"channel": channel, "knowledge": "off", "note": "what was extracted stays"}


async def mark_deleted(kernel: Any, guild_id: str, channel_id: str) -> None:
    svc = await ready(kernel)
    async with svc.engine.begin() as conn:
        await conn.execute(
            sa.update(C)
            .where(C.c.guild_id == guild_id, C.c.channel_id == channel_id)
            .values(deleted=True, enabled=False, updated_ms=now_ms())
        )


async def status(ctx: Any, channel: str | None = None) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    channel_id = channel or ctx.channel_id
    if not channel_id:
        raise ToolExecutionError("this call has no channel: name one with channel:")
    row = await _row(svc, ctx.guild_id, channel_id)
    state = await ctx.kernel.channels.get(ctx.guild_id, channel_id)
    counts: dict[str, int] = {}
    g, c = ctx.guild_id, channel_id
    async with svc.engine.connect() as conn:
        for name, table in (
            ("decisions", tables.decisions),
            ("actions", tables.actions),
            ("signals", tables.signals),
            ("entities", tables.entities),
        ):
            counts[name] = int(
                await conn.scalar(
                    sa.select(sa.func.count())
                    .select_from(table)
                    .where(table.c.guild_id == g, table.c.channel_id == c)
                )
                or 0
            )
        a = tables.actions
        counts["open_actions"] = int(
            await conn.scalar(
                sa.select(sa.func.count())
                .select_from(a)
                .where(a.c.guild_id == g, a.c.channel_id == c, a.c.status == "open")
            )
            or 0
        )
        sm = tables.summaries
        last = (
            await conn.execute(
                sa.select(sm.c.granularity, sm.c.period_end_ms, sm.c.generated_ms)
                .where(sm.c.guild_id == g, sm.c.scope_id == c, sm.c.granularity != "on_demand")
                .order_by(sm.c.generated_ms.desc())
                .limit(1)
            )
        ).first()
    on = bool(row and row.enabled and not row.deleted)
    return {
        "channel": channel_id,
        "knowledge": "on" if on else "off",
        "state": state,
        "since": iso(row.joined_ms) if row else None,
        "timezone": row.timezone if row else "UTC",
        "counts": counts,
        "last_summary": None
        if last is None
        else {"granularity": last.granularity, "period_end": iso(last.period_end_ms)},
        "queue": {"waiting": len(svc.queue), "dropped": svc.queue.dropped},
        "writer": {"pending": len(svc.notes), "failed": svc.notes.failed},
        "model": {"fallbacks": svc.fallbacks, "escalations": svc.escalations},
        **await models.readiness(ctx.kernel, ctx.guild_id),
    }


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [p.strip() for p in value.split(",") if p.strip()][:20]


async def context(
    ctx: Any,
    purpose: str | None = None,
    type: str | None = None,
    tags: str | None = None,
    stakeholders: str | None = None,
    related: str | None = None,
) -> dict[str, Any]:
    svc = await ready(ctx.kernel)
    if not ctx.channel_id:
        raise ToolExecutionError("run this in the channel whose context you mean")
    values: dict[str, Any] = {}
    if purpose is not None:
        values["purpose"] = purpose
    if type is not None:
        values["context_type"] = type
    for key, raw in (("tags", tags), ("stakeholders", stakeholders), ("related_channels", related)):
        if (parts := _split(raw)) is not None:
            values[key] = parts
    if values:
        values |= {"context_updated_ms": now_ms(), "context_updated_by": ctx.actor.id}
        row = await _upsert(svc, ctx.guild_id, ctx.channel_id, values)
    else:
        row = await _row(svc, ctx.guild_id, ctx.channel_id)
    if row is None:
        return {"channel": ctx.channel_id, "context": None}
    return {
        "channel": ctx.channel_id,
        "context": {
            "purpose": row.purpose,
            "type": row.context_type,
            "tags": row.tags or [],
            "stakeholders": row.stakeholders or [],
            "related": row.related_channels or [],
            "updated": iso(row.context_updated_ms),
        },
    }
