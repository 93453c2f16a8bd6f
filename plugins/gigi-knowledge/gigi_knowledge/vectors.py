"""Embeddings: which embedder serves a guild, float32 encoding and cosine similarity.

As guild memory does: the guild's (or tenant's) ``embedding`` profile when it resolves,
else a keyless embedder inside Gigi (``gigi-local-embed``); always ``billing="server"``.
The text embedded is dropped by the caller as soon as the vectors exist.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

log = logging.getLogger("gigi_knowledge")


async def embed(
    kernel: Any, guild_id: str, texts: list[str]
) -> tuple[str, list[np.ndarray]] | None:
    """(model key, unit vectors) for ``texts``, or None when nothing can embed now."""
    if not texts:
        return None
    llm = kernel.llm
    try:
        try:
            await llm.resolve(guild_id, "embedding", None, billing="server")
            reply = await llm.embed(texts, guild_id=guild_id, actor=None, billing="server")
        except Exception as exc:
            from gigi_core import GigiError

            if not isinstance(exc, GigiError):
                raise
            reply = await _keyless(llm, texts)
            if reply is None:
                return None
    except Exception as exc:  # the pipeline goes on without vectors
        log.warning("knowledge: embedding failed: %s", type(exc).__name__)
        return None
    if len(reply.vectors) != len(texts):
        log.warning("knowledge: the embedder returned a different number of vectors")
        return None
    # The model asked for (the fallback's when it answered), not the provider's alias for it.
    model = getattr(reply, "requested_model", None) or reply.model
    return f"{reply.provider}:{model}", [unit(v) for v in reply.vectors]


async def _keyless(llm: Any, texts: list[str]) -> Any:
    from gigi_core.llm import EmbeddingRequest

    for provider in sorted(llm.keyless_providers(), key=lambda p: p.name):
        model = provider.default_models.get("embedding")
        if model and provider.supports.embeddings:
            return await provider.embed(
                EmbeddingRequest(model=model, inputs=texts, purpose="document"), api_key=""
            )
    return None


def unit(vector: Any) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def encode(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def pg_text(vector: np.ndarray) -> str:
    """pgvector's text form."""
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


def with_pg(dialect: str, row: dict[str, Any]) -> dict[str, Any]:
    """A ``knowledge_embeddings`` row as the backend stores it: on PostgreSQL the blob is
    also written as a pgvector (``embedding``), which semantic search orders by."""
    if dialect != "postgresql":
        return row
    return {**row, "embedding": pg_text(decode(row["vector"]))}


def decode(blob: bytes) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype="<f4")


def best(query: np.ndarray, rows: list[Any], limit: int | None = None) -> list[tuple[float, Any]]:
    """(cosine, row) for rows of the query's model and size, best first (the ``limit`` best
    when given): one matrix product over the rows whose blob has the query's size."""
    size = query.shape[0] * 4
    same = [r for r in rows if len(r.vector) == size]
    if not same:
        return []
    matrix = np.frombuffer(b"".join([bytes(r.vector) for r in same]), dtype="<f4")
    scores = matrix.reshape(len(same), query.shape[0]) @ np.asarray(query, dtype=np.float32)
    if limit is not None and limit < len(same):
        top = np.argpartition(-scores, limit)[:limit]
        order = top[np.argsort(-scores[top], kind="stable")]
    else:
        order = np.argsort(-scores, kind="stable")
    return [(float(scores[i]), same[i]) for i in order]
