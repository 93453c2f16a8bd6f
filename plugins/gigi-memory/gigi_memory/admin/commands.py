"""The admin commands: ``/memory enable|disable|status|purge|policy`` (memory.manage.guild).

Settings are written to the plugin's tables, then into this process's cache at once (other
processes reload within ``GIGI_MEMORY_POLICY_SECONDS``). Anything that rewrites or deletes
stored messages goes through the writer, after what it already queued, and is awaited.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gigi_core import Hint, ToolExecutionError
from gigi_memory.ingest import backfill
from gigi_memory.ingest.operations import Op
from gigi_memory.ingest.redactor import budget_seconds
from gigi_memory.ingest.text import MAX_PATTERNS, RedactionRules, check_pattern, check_patterns
from gigi_memory.policy import (
    EMBEDDING_SOURCES,
    STORAGE_MODES,
    ChannelMode,
    now_ms,
    read_policy,
    save_channel,
    save_policy,
)
from gigi_memory.search import reads
from gigi_memory.service import MemoryService, service_of

RETENTION_JOB = "memory.retention"


async def _svc(ctx: Any) -> MemoryService:
    svc = service_of(ctx.kernel)
    if not svc.cache.loaded:
        await svc.start()
    return svc


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat()


async def _recompute(svc: MemoryService, guild_id: str, channels: list[str], days: int) -> None:
    """Stored messages of these channels take the new retention (and shorter ones expire)."""
    if not channels:
        return
    own = [
        c
        for c in svc.cache.channels.get(guild_id, {})
        if c not in channels  # a thread with a mode of its own keeps its retention
    ]
    await svc.writer.submit(
        Op("retention", guild_id, {"channel_ids": channels, "days": days, "own_threads": own})
    )


async def _schedule_purge(ctx: Any) -> None:
    """Run the retention purge soon (one queued purge at a time), so shorter retention bites."""
    try:
        await ctx.kernel.jobs.defer(RETENTION_JOB, {}, key="memory-retention")
    except Exception:  # the hourly schedule will do it
        pass


# -- /memory enable ------------------------------------------------------------------------------


async def enable(ctx: Any, channel: str, retention_days: int | None = None) -> dict[str, Any]:
    svc = await _svc(ctx)
    guild = ctx.guild_id
    policy = svc.cache.guild(guild)
    effective = retention_days or policy.retention_days
    if not effective:
        raise ToolExecutionError(
            "set a retention first, nothing is remembered without one",
            hint=Hint(
                "/memory enable channel: retention_days:N, or a server default with "
                "/memory policy retention_days:N",
                console=f"/memory enable channel={channel} retention_days=N, or a server "
                "default with /memory policy retention_days=N",
                shell=f"gigi memory enable --guild {guild} --channel {channel} "
                f"--retention-days N, or a server default with gigi memory policy --guild "
                f"{guild} --retention-days N",
            ),
        )
    before = svc.cache.channel(guild, channel)
    enabled_at = before.enabled_at_ms if before is not None and before.mode == "on" else now_ms()
    mode = ChannelMode("on", retention_days, enabled_at)
    async with svc.engine.begin() as conn:
        await save_channel(conn, svc.dialect, guild, channel, mode, ctx.actor.id)
    svc.cache.set_channel(guild, channel, mode)
    old_days = svc.cache.retention_of(guild, before) if before is not None else None
    if before is not None and old_days != effective:
        await _recompute(svc, guild, [channel], effective)
        await _schedule_purge(ctx)
    return {
        "channel_id": channel,
        "mode": "on",
        "retention_days": effective,
        "retention_source": "channel" if retention_days else "server default",
        "remembering_since": _iso(enabled_at),
        "note": "messages from now on are remembered; older ones only through a backfill",
    }


# -- /memory disable -----------------------------------------------------------------------------


async def disable(ctx: Any, channel: str) -> dict[str, Any]:
    svc = await _svc(ctx)
    guild = ctx.guild_id
    before = svc.cache.channel(guild, channel)
    mode = ChannelMode("off", before.retention_days if before else None, None)
    async with svc.engine.begin() as conn:
        await save_channel(conn, svc.dialect, guild, channel, mode, ctx.actor.id)
    svc.cache.set_channel(guild, channel, mode)
    return {
        "channel_id": channel,
        "mode": "off",
        "was": before.mode if before else "off",
        "note": "nothing new is remembered here; what is stored stays until its retention "
        "ends or /memory purge",
    }


# -- /memory status ------------------------------------------------------------------------------


async def status(ctx: Any) -> dict[str, Any]:
    svc = await _svc(ctx)
    guild = ctx.guild_id
    async with svc.engine.connect() as conn:
        policy = await read_policy(conn, guild)
        stored = await reads.channel_counts(conn, guild, now_ms())
    modes = svc.cache.channels.get(guild, {})
    channels = []
    for channel_id in sorted(set(modes) | set(stored)):
        mode = modes.get(channel_id)
        counts = stored.get(channel_id, {})
        channels.append(
            {
                "channel_id": channel_id,
                "mode": mode.mode if mode else "off",
                "retention_days": svc.cache.retention_of(guild, mode) if mode else None,
                "remembering_since": _iso(mode.enabled_at_ms) if mode else None,
                "messages": counts.get("messages", 0),
                "oldest": _iso(counts.get("oldest_ms")),
                "newest": _iso(counts.get("newest_ms")),
            }
        )
    w = svc.writer
    return {
        "policy": policy.as_dict(),
        "channels": channels,
        "vectors": await svc.vectors.lag(guild),
        "syncs": await backfill.status(svc, guild),
        "writer": {
            "queued": len(w.queue),
            "lag_seconds": w.lag_seconds,
            "written": w.stats.written,
            "dropped": w.stats.dropped,
            "failed": w.stats.failed,
            "retries": w.stats.retries,
            "last_error": w.stats.last_error,
            "last_commit": _iso(w.stats.last_commit_ms),
        },
        "last_purge": {
            "at": policy.last_purge_at.isoformat() if policy.last_purge_at else None,
            "messages": policy.last_purge_count,
        },
        "redaction": _redaction_status(svc, guild, policy.redaction),
    }


def _redaction_status(svc: MemoryService, guild: str, rules: RedactionRules) -> dict[str, Any]:
    """Whether the server's patterns apply, and the messages kept without text (this process)
    because they could not: the pattern and the reason, never any message text."""
    stats = svc.writer.redactor.stats_for(guild)
    last_at = stats.pop("last_at_ms")
    return {
        "rules_problem": rules.problem(),
        "budget_ms": round(budget_seconds() * 1000, 3),
        **stats,
        "last_at": _iso(last_at),
    }


# -- /memory purge -------------------------------------------------------------------------------


async def purge(ctx: Any, channel: str | None = None, everything: bool = False) -> dict[str, Any]:
    if bool(channel) == bool(everything):
        raise ToolExecutionError(
            "name one channel with channel:, or purge all with everything:true"
        )
    svc = await _svc(ctx)
    guild = ctx.guild_id
    if everything:
        counts = await svc.writer.submit(Op("purge_guild", guild, {"keep_policy": True}))
        return {"purged": "everything", "messages": counts.get("messages", 0)}
    assert channel is not None
    svc.writer.drop_channel(guild, channel)
    counts = await svc.writer.submit(Op("purge_channel", guild, {"channel_id": channel}))
    return {"purged": "channel", "channel_id": channel, "messages": counts.get("messages", 0)}


# -- /memory policy ------------------------------------------------------------------------------


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
    svc = await _svc(ctx)
    guild = ctx.guild_id
    async with svc.engine.connect() as conn:
        current = await read_policy(conn, guild)
    if embeddings is not None and embeddings not in EMBEDDING_SOURCES:
        raise ToolExecutionError(f"embeddings: one of {', '.join(EMBEDDING_SOURCES)}")
    rules = _rules(current.redaction, redact_emails, redact_phones, redact_add, redact_remove)
    changes = {
        k: v
        for k, v in {
            "enabled": enabled,
            "retention_days": retention_days,
            "storage": storage,
            "bots_allowed": allow_bots,
            "embeddings": embeddings,
            "redaction": rules if rules != current.redaction else None,
        }.items()
        if v is not None
    }
    if not changes:
        return {"policy": current.as_dict(), "changed": []}
    new = replace(current, **changes)
    async with svc.engine.begin() as conn:
        await save_policy(conn, svc.dialect, guild, new, ctx.actor.id)
    svc.cache.set_guild(guild, replace(svc.cache.guild(guild), **changes))
    out: dict[str, Any] = {"policy": new.as_dict(), "changed": sorted(changes)}
    if storage is not None and STORAGE_MODES.index(storage) > STORAGE_MODES.index(current.storage):
        out["rewritten"] = (await svc.writer.submit(Op("restrict", guild, {"storage": storage})))[
            "rewritten"
        ]
    if embeddings == "off" and current.embeddings != "off":
        out["vectors_deleted"] = (await svc.writer.submit(Op("drop_vectors", guild, {})))[
            "segments"
        ]
    elif embeddings is not None and embeddings != current.embeddings:
        svc.vectors.kick({guild})  # another model: the job re-embeds what is stored
    if "redaction" in changes:
        out["note"] = (
            "the rules apply to messages remembered from now on and to every embedding; "
            "text already stored keeps its earlier masking"
        )
    if (problem := new.redaction.problem()) is not None:
        out["redaction_problem"] = (
            f"{problem}; until it is removed (redact_remove) messages are kept without text"
        )
    if retention_days is not None and retention_days != current.retention_days:
        following = [
            c
            for c, mode in svc.cache.channels.get(guild, {}).items()
            if mode.retention_days is None
        ]
        await _recompute(svc, guild, following, retention_days)
        await _schedule_purge(ctx)
    return out


def _rules(
    rules: RedactionRules,
    emails: bool | None,
    phones: bool | None,
    add: str | None,
    remove: str | None,
) -> RedactionRules:
    """The rules after this change (tokens and secrets are always masked)."""
    patterns = list(rules.patterns)
    if add is not None:
        problem = check_pattern(add)
        if problem:
            raise ToolExecutionError(f"redact_add: pattern {add!r} is refused: {problem}")
        if add not in patterns:
            if len(patterns) >= MAX_PATTERNS:
                raise ToolExecutionError(
                    f"at most {MAX_PATTERNS} redaction patterns; remove one first"
                )
            patterns.append(add)
            # As they are applied: every pattern in one RE2 set (a stored pattern from an
            # older release may be refused now; it is named, to be removed).
            if (problem := check_patterns(tuple(patterns))) is not None:
                raise ToolExecutionError(f"redact_add: {problem}")
    if remove is not None:
        if remove not in patterns:
            raise ToolExecutionError(
                "redact_remove: no such pattern (see /memory policy for the exact list)"
            )
        patterns.remove(remove)
    return RedactionRules(
        emails=rules.emails if emails is None else emails,
        phones=rules.phones if phones is None else phones,
        patterns=tuple(patterns),
    )
