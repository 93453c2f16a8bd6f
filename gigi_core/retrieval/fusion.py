"""The merge: dedupe by source id, weighted RRF, multi-path boost, recency and
confidence weighting, top-k. Pure and deterministic (ties break on the source id), so a
golden test can pin the ranking and the benchmark can time it alone.

The merge never reorders what one retriever ranked unless it has a reason the retriever
did not: another retriever agreeing (the boost counts retrievers, not a retriever's own
sub-paths, which its ranking already weighed), the query asking for time (``recency``),
or a hit's confidence. On real conversations that span months, recency on every query
and the sub-path boost each pulled memory's ranking down (docs/benchmarks/memory-search.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from gigi_core.retrieval.config import RetrievalSettings
from gigi_core.retrieval.port import Hit, Ranked

DAY_SECONDS = 86400.0
# Words that ask for time: only a query with one of them (or a plan's period) gets recency.
TIME_WORDS = frozenset(
    "latest last recent recently newest lately today yesterday tonight ago".split()
)


def asks_for_time(words: Iterable[str]) -> bool:
    """Whether a query's (lower-case) words ask for what is recent."""
    return any(w in TIME_WORDS for w in words)


def qualified_paths(retriever: str, hit: Hit) -> tuple[str, ...]:
    """``memory.fulltext``-style names of the paths that found a hit (the retriever alone when
    it reports no sub-paths); the multi-path boost counts these."""
    return tuple(f"{retriever}.{p}" for p in hit.paths) if hit.paths else (retriever,)


def recency_factor(when: datetime | None, now: datetime, s: RetrievalSettings) -> float:
    """Exponential decay by age with the configured half-life, never below ``recency_floor``.

    An undated hit counts as one half-life old: neither favoured nor buried.
    """
    if s.recency_half_life_days <= 0:
        return 1.0
    if when is None:
        decay = 0.5
    else:
        age_days = max(0.0, (now - when).total_seconds() / DAY_SECONDS)
        decay = 0.5 ** (age_days / s.recency_half_life_days)
    return s.recency_floor + (1.0 - s.recency_floor) * decay


def confidence_factor(confidence: float, s: RetrievalSettings) -> float:
    """``1 - w * (1 - confidence)``: with the default w = 0.5 a 0.9 hit outranks a 0.6 one."""
    w = min(1.0, s.confidence_weight)
    return 1.0 - w * (1.0 - float(confidence))


def merge(
    per_path: Mapping[str, Sequence[Hit]],
    settings: RetrievalSettings,
    now: datetime,
    *,
    limit: int | None = None,
    recency: bool = True,
) -> list[Ranked]:
    """Fuse each retriever's ranked hits into one ranking (best first). ``recency``: apply
    the recency factor (the engine asks for it only when the query asks for time)."""
    k = settings.rrf_k
    # source id -> [rrf, qualified paths, ranks, best hit, its rank, its path, flags...]
    acc: dict[str, list[Any]] = {}
    for retriever in sorted(per_path):
        weight = settings.weight(retriever)
        seen: set[str] = set()
        rank = 0
        for hit in per_path[retriever]:
            sid = hit.source_id
            if sid in seen:
                continue
            seen.add(sid)
            rank += 1
            entry = acc.get(sid)
            if entry is None:
                entry = acc[sid] = [0.0, set(), {}, hit, rank, retriever, False, False, False]
            elif (rank, retriever) < (entry[4], entry[5]):
                entry[3], entry[4], entry[5] = hit, rank, retriever
            entry[0] += weight / (k + rank)
            entry[1].update(qualified_paths(retriever, hit))
            entry[2][retriever] = rank
            entry[6] = entry[6] or hit.edited
            entry[7] = entry[7] or hit.superseded
            entry[8] = entry[8] or hit.pinned
    scored = []
    for sid, entry in acc.items():
        hit = entry[3]
        score = entry[0]
        if len(entry[2]) >= settings.multi_path_min:  # retrievers that found it
            score *= settings.multi_path_boost
        if recency:
            score *= recency_factor(hit.timestamp, now, settings)
        score *= confidence_factor(hit.confidence, settings)
        scored.append((-score, sid, entry))
    scored.sort(key=lambda x: (x[0], x[1]))
    cap = settings.max_hits if limit is None else limit
    ranked = []
    for neg, _, entry in scored[:cap]:
        hit = entry[3]
        flags = (entry[6], entry[7], entry[8])
        if flags != (hit.edited, hit.superseded, hit.pinned):
            hit = replace(hit, edited=flags[0], superseded=flags[1], pinned=flags[2])
        ranked.append(Ranked(hit=hit, score=-neg, paths=tuple(sorted(entry[1])), ranks=entry[2]))
    return ranked
