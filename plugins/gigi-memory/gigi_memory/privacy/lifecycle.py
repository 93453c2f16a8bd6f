"""The retention job and the privacy hooks' work (export, delete, guild purge)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.ingest.operations import Op
from gigi_memory.service import service_of

log = logging.getLogger("gigi_memory")

RETENTION_SCHEDULE = "17 * * * *"  # hourly, at a quarter past (UTC)


async def retention_job(ctx: Any) -> dict[str, Any]:
    """Delete everything past its retention on this store; record per guild when and how much."""
    svc = service_of(ctx.kernel)
    await ctx.progress(0, 1, "purging")
    counts = await svc.store.purge_expired()
    async with svc.engine.connect() as conn:
        guilds = list((await conn.scalars(sa.select(tables.policies.c.guild_id))).all())
    await svc.store.record_purge(counts, guilds)
    await svc.authors.prune()  # names of members none of whose messages are left
    total = sum(counts.values())
    log.info("memory: retention purge removed %d message(s) in %d guild(s)", total, len(counts))
    await ctx.progress(1, 1, f"{total} purged")
    return {"messages": total, "guilds": len(counts)}


async def export_user(kernel: Any, user_id: str, guild_id: str | None) -> dict[str, Any] | None:
    svc = service_of(kernel)
    rows = await svc.store.user_messages(user_id, guild_id)
    mentioned = await svc.store.user_mentions(user_id, guild_id)
    names = await svc.authors.export(user_id, guild_id)
    if not rows and not mentioned and not names:
        return None
    out = []
    for row in rows:
        text = svc.unseal(row)
        out.append(
            {
                "guild_id": row.guild_id,
                "channel_id": row.channel_id,
                "message_id": row.message_id,
                "created_at": _iso(row.created_ms),
                "edited_at": _iso(row.edited_ms),
                "retained_until": _iso(row.retention_until_ms),
                "text": text,
                "search_words": row.search_text if text is None else None,
            }
        )
    return {"messages": out, "times_mentioned": mentioned, "names": names}


async def delete_user(kernel: Any, user_id: str, guild_id: str | None) -> dict[str, int]:
    """Ordered after what the writer holds, so a message queued a moment ago goes too."""
    from gigi_memory.privacy import erasures

    svc = service_of(kernel)
    counts = await svc.writer.submit(Op("purge_user", guild_id, {"user_id": user_id})) or {}
    await erasures.mark(kernel, svc, user_id, guild_id)  # no sync or import brings them back
    names = await svc.authors.forget(user_id, guild_id)
    return {**counts, "names": names} if names else counts


async def purge_guild(kernel: Any, guild_id: str) -> dict[str, int]:
    svc = service_of(kernel)
    svc.cache.forget_guild(guild_id)  # nothing more is ingested, then everything goes
    counts = dict(await svc.writer.submit(Op("purge_guild", guild_id, {})) or {})
    counts["names"] = await svc.authors.forget(None, guild_id)
    return {k: v for k, v in counts.items() if v}


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat()
