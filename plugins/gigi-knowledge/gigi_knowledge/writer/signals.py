"""Notes (``knowledge_signals``) outside an extraction: tier 1's light notes, written in
batches by the service's ``Batcher`` (``svc.notes``), and single notes with a vector (the
fallback signal)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables, vectors
from gigi_knowledge.ingest.window import WindowMessage
from gigi_knowledge.source_refs import source_ref
from gigi_knowledge.writer.extraction import Context, _vector_row, new_id

log = logging.getLogger("gigi_knowledge")
S, V = tables.signals, tables.embeddings


def note_row(
    ctx: Context, kind: str, summary: str, confidence: float, focus: WindowMessage
) -> dict[str, Any]:
    """A light tier-1 note (no vector), for the ``Batcher``."""
    return {
        "id": new_id(),
        "guild_id": ctx.guild_id,
        "channel_id": ctx.channel_id,
        "signal_type": kind,
        "summary": summary[:400],
        "participants": [focus.author_id],
        "tags": [],
        "related_entities": [],
        "occurred_ms": focus.created_ms,
        "confidence": confidence,
        "source_ref": source_ref([focus]),
        "extraction_model": ctx.model,
        "created_ms": ctx.now_ms,
    }


async def write_signal(
    svc: Any,
    ctx: Context,
    *,
    signal_type: str,
    summary: str,
    confidence: float,
    messages: Sequence[WindowMessage],
    participants: Sequence[str] = (),
    tags: Sequence[str] = (),
    embed: bool = False,
) -> str:
    sid = new_id()
    row = {
        "id": sid,
        "guild_id": ctx.guild_id,
        "channel_id": ctx.channel_id,
        "signal_type": signal_type,
        "summary": summary[:400],
        "participants": sorted(set(participants) | {m.author_id for m in messages}),
        "tags": list(tags),
        "related_entities": [],
        "occurred_ms": max(m.created_ms for m in messages),
        "confidence": confidence,
        "source_ref": source_ref(messages),
        "extraction_model": ctx.model,
        "created_ms": ctx.now_ms,
    }
    vecs = await vectors.embed(svc.kernel, ctx.guild_id, [summary]) if embed else None
    async with svc.engine.begin() as conn:
        await conn.execute(sa.insert(S).values(**row))
        if vecs:
            await conn.execute(
                sa.insert(V).values(
                    **vectors.with_pg(
                        svc.dialect, _vector_row(ctx, "signal", sid, vecs[0], vecs[1][0], row)
                    )
                )
            )
    return sid
