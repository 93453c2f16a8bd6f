"""The action handlers as the kernel sees them: signatures only, the work imported on use.

Loading the plugin (``gigi plugins list``, every ``gigi`` command) then costs no SQLAlchemy;
the implementations are in ``gigi_memory.search.tools`` (reads) and ``gigi_memory.admin.commands``.
"""

from __future__ import annotations

from typing import Any


async def count(
    ctx: Any,
    text: str | None = None,
    author: str | None = None,
    mentioned: str | None = None,
    scope: str = "this-channel",
    channel: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    from gigi_memory.search import tools

    return await tools.count(
        ctx,
        text=text,
        author=author,
        mentioned=mentioned,
        scope=scope,
        channel=channel,
        since=since,
        until=until,
    )


async def search(
    ctx: Any,
    query: str,
    scope: str = "this-channel",
    channel: str | None = None,
    author: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    from gigi_memory.search import tools

    return await tools.search(
        ctx,
        query=query,
        scope=scope,
        channel=channel,
        author=author,
        since=since,
        until=until,
        limit=limit,
    )


async def recent(ctx: Any, channel: str | None = None, limit: int = 20) -> dict[str, Any]:
    from gigi_memory.search import tools

    return await tools.recent(ctx, channel=channel, limit=limit)


async def enable(ctx: Any, channel: str, retention_days: int | None = None) -> dict[str, Any]:
    from gigi_memory.admin import commands as admin

    return await admin.enable(ctx, channel=channel, retention_days=retention_days)


async def disable(ctx: Any, channel: str) -> dict[str, Any]:
    from gigi_memory.admin import commands as admin

    return await admin.disable(ctx, channel=channel)


async def status(ctx: Any) -> dict[str, Any]:
    from gigi_memory.admin import commands as admin

    return await admin.status(ctx)


async def purge(ctx: Any, channel: str | None = None, everything: bool = False) -> dict[str, Any]:
    from gigi_memory.admin import commands as admin

    return await admin.purge(ctx, channel=channel, everything=everything)


async def policy(
    ctx: Any,
    enabled: bool | None = None,
    retention_days: int | None = None,
    storage: str | None = None,
    allow_bots: bool | None = None,
    embeddings: str | None = None,
    redact_emails: bool | None = None,
    redact_phones: bool | None = None,
    redact_add: str | None = None,
    redact_remove: str | None = None,
) -> dict[str, Any]:
    from gigi_memory.admin import commands as admin

    return await admin.policy(
        ctx,
        enabled=enabled,
        retention_days=retention_days,
        storage=storage,
        allow_bots=allow_bots,
        embeddings=embeddings,
        redact_emails=redact_emails,
        redact_phones=redact_phones,
        redact_add=redact_add,
        redact_remove=redact_remove,
    )


async def retention_job(ctx: Any) -> dict[str, Any]:
    from gigi_memory.privacy import lifecycle

    return await lifecycle.retention_job(ctx)


async def embed_job(ctx: Any, guild_id: str | None = None) -> dict[str, Any]:
    from gigi_memory.embedding import vectors

    return await vectors.embed_job(ctx, guild_id=guild_id)


async def sync(ctx: Any, channel: str, days: int | None = None) -> dict[str, Any]:
    from gigi_memory.ingest import backfill

    return await backfill.start(ctx, channel, days)


async def sync_job(ctx: Any, guild_id: str, channel_id: str) -> None:
    from gigi_memory.ingest import backfill

    await backfill.run(ctx, guild_id, channel_id)


ACTIONS = {
    "memory.count": count,
    "memory.search": search,
    "memory.recent": recent,
    "memory.enable": enable,
    "memory.disable": disable,
    "memory.status": status,
    "memory.purge": purge,
    "memory.policy": policy,
    "memory.sync": sync,
}
