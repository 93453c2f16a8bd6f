"""Segments and their vectors in the store: chunking, encoding, writing and purging.

A segment is a span (``span_start``..``span_end``, in characters) of one message's
redacted text with its embedding; no text is stored with it. Every row names its model
and dimension, and searches read only rows of one ``(model, dims)``. Purges remove
segments in the same transaction as the messages they belong to, so no vector outlives
its message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gigi_memory import tables

SEGMENT_CHARS = 1000  # a Discord message (4,000 characters at most) is 1 to 4 segments
MIN_SEGMENT_CHARS = 200  # a cut looks back at most this far for a space
IN_LIMIT = 500
s = tables.segments


@dataclass(frozen=True, slots=True)
class Span:
    seq: int
    start: int
    end: int


def chunk(text: str, size: int = SEGMENT_CHARS) -> list[Span]:
    """Spans of at most ``size`` characters, cut at a space where one is near; blank spans go."""
    spans: list[Span] = []
    start, n = 0, len(text)
    while start < n:
        end = min(n, start + size)
        if end < n:
            cut = text.rfind(" ", start + size - MIN_SEGMENT_CHARS, end)
            if cut > start:
                end = cut
        if text[start:end].strip():
            spans.append(Span(len(spans), start, end))
        start = end
    return spans


def normalised(vector: Sequence[float]) -> Any:
    """float32, unit length (cosine = dot product); a zero vector stays zero."""
    import numpy as np

    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def normalised_all(vectors: Sequence[Sequence[float]]) -> list[Any]:
    """``normalised`` for a batch at once (one NumPy call when the lengths agree)."""
    import numpy as np

    if not vectors or len({len(v) for v in vectors}) != 1:
        return [normalised(v) for v in vectors]
    block = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    block = np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
    return list(block)


def encode(dialect: str, vector: Any) -> Any:
    """The stored form: a float32 blob (SQLite) or pgvector's text form (PostgreSQL)."""
    if dialect == "sqlite":
        return vector.astype("<f4").tobytes()
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


async def insert(conn: Any, dialect: str, rows: list[dict[str, Any]]) -> None:
    """Insert segment rows (``embedding`` already encoded)."""
    if not rows:
        return
    value = "CAST(:embedding AS vector)" if dialect == "postgresql" else ":embedding"
    await conn.execute(
        sa.text(
            "INSERT INTO memory_segments (guild_id, message_row_id, channel_id, root_channel_id, "
            "author_id, created_ms, seq, span_start, span_end, model, dims, embedding) VALUES "
            "(:guild_id, :message_row_id, :channel_id, :root_channel_id, :author_id, :created_ms, "
            f":seq, :span_start, :span_end, :model, :dims, {value})"
        ),
        rows,
    )


async def drop_rows(conn: Any, row_ids: Sequence[int]) -> int:
    """Segments of these message rows (by ``memory_messages.id``)."""
    total = 0
    for start in range(0, len(row_ids), IN_LIMIT):
        part = list(row_ids[start : start + IN_LIMIT])
        result = await conn.execute(sa.delete(s).where(s.c.message_row_id.in_(part)))
        total += max(result.rowcount or 0, 0)
    return total


async def drop_for_messages(conn: Any, keys: Iterable[tuple[str | None, str, str]]) -> None:
    """Segments of messages named by (guild, channel, message id): edits and deletes."""
    params = [{"g": g, "c": c, "m": mid} for g, c, mid in keys if g is not None]
    if not params:
        return
    await conn.execute(
        sa.text(
            "DELETE FROM memory_segments WHERE message_row_id IN (SELECT id FROM memory_messages "
            "WHERE guild_id = :g AND channel_id = :c AND message_id = :m)"
        ),
        params,
    )


async def drop_guild(conn: Any, guild_id: str) -> int:
    """Every segment of a guild (a guild purge's strays, embeddings turned off)."""
    result = await conn.execute(sa.delete(s).where(s.c.guild_id == guild_id))
    return max(result.rowcount or 0, 0)
