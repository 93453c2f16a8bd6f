"""The action and job handlers as the kernel sees them: signatures only, the work imported
on use, so loading the plugin costs no SQLAlchemy (as in gigi-memory)."""

from __future__ import annotations

from typing import Any


async def status(ctx: Any, channel: str | None = None) -> dict[str, Any]:
    from gigi_knowledge.admin import channels as admin

    return await admin.status(ctx, channel=channel)


async def enable(ctx: Any, channel: str, timezone: str | None = None) -> dict[str, Any]:
    from gigi_knowledge.admin import channels as admin

    return await admin.enable(ctx, channel=channel, timezone=timezone)


async def disable(ctx: Any, channel: str) -> dict[str, Any]:
    from gigi_knowledge.admin import channels as admin

    return await admin.disable(ctx, channel=channel)


async def context(
    ctx: Any,
    purpose: str | None = None,
    type: str | None = None,
    tags: str | None = None,
    stakeholders: str | None = None,
    related: str | None = None,
) -> dict[str, Any]:
    from gigi_knowledge.admin import channels as admin

    return await admin.context(
        ctx, purpose=purpose, type=type, tags=tags, stakeholders=stakeholders, related=related
    )


async def decisions(
    ctx: Any,
    status: str = "active",
    owner: str | None = None,
    tag: str | None = None,
    since: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    from gigi_knowledge.search import reads

    return await reads.decisions(ctx, status=status, owner=owner, tag=tag, since=since, limit=limit)


async def actions(
    ctx: Any, status: str = "open", owner: str | None = None, limit: int = 10
) -> dict[str, Any]:
    from gigi_knowledge.search import reads

    return await reads.actions(ctx, status=status, owner=owner, limit=limit)


async def catchup(ctx: Any, since: str | None = None) -> dict[str, Any]:
    from gigi_knowledge.followup import summaries

    return await summaries.catchup(ctx, since=since)


async def action_update(ctx: Any, id: str, status: str) -> dict[str, Any]:
    from gigi_knowledge.followup import updates

    return await updates.action_update(ctx, id=id, status=status)


async def action_reassign(ctx: Any, id: str, owner: str) -> dict[str, Any]:
    from gigi_knowledge.followup import updates

    return await updates.action_reassign(ctx, id=id, owner=owner)


async def decision_supersede(ctx: Any, id: str) -> dict[str, Any]:
    from gigi_knowledge.followup import updates

    return await updates.decision_supersede(ctx, id=id)


async def decision_dismiss(ctx: Any, id: str) -> dict[str, Any]:
    from gigi_knowledge.followup import updates

    return await updates.decision_dismiss(ctx, id=id)


async def summary_job(
    ctx: Any, guild_id: str | None = None, channel_id: str | None = None, now: str | None = None
) -> dict[str, int]:
    from gigi_knowledge.followup import summaries

    return await summaries.summary_job(ctx, guild_id=guild_id, channel_id=channel_id, now=now)


async def staleness_job(ctx: Any) -> dict[str, int]:
    from gigi_knowledge.followup import proactive

    return await proactive.staleness_job(ctx)


async def contradiction_job(ctx: Any) -> dict[str, int]:
    from gigi_knowledge.followup import proactive

    return await proactive.contradiction_job(ctx)


ACTIONS = {
    "knowledge.status": status,
    "knowledge.enable": enable,
    "knowledge.disable": disable,
    "knowledge.context": context,
    "knowledge.decisions": decisions,
    "knowledge.actions": actions,
    "knowledge.catchup": catchup,
    "knowledge.action_update": action_update,
    "knowledge.action_reassign": action_reassign,
    "knowledge.decision_supersede": decision_supersede,
    "knowledge.decision_dismiss": decision_dismiss,
}
