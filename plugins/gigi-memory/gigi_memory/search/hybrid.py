"""``memory.search``'s two paths and their fusion (the ranking itself: ``lexical``).

The query is embedded once, before any connection is taken (no connection waits on the
embedder; without a vector, full text only); then each path runs on its own connection at
once: full text (candidates from FTS5 / ``tsvector``, BM25 in Python, the message before
each hit credited to it) and vectors (NumPy or pgvector). Only rows the reads' filters let
through come back; nothing is unsealed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from gigi_core import ToolExecutionError
from gigi_core.retrieval import asks_for_time
from gigi_memory.embedding.vectors import UsageNotRecorded
from gigi_memory.ingest.text import query_words
from gigi_memory.search import lexical, reads, vecsearch
from gigi_memory.service import MemoryService

VECTOR_FACTOR = 4  # the vector path returns this many times the hits asked for
NEIGHBOUR_SOURCES = 100  # best-scoring candidates whose next message gets their credit


@dataclass
class Lexical:
    """The full-text path's answer: row id -> (row, score with neighbour credit), and the
    candidates as the engine returned them (they carry ``vdist`` for the walk check)."""

    scored: dict[int, tuple[Any, float]]
    candidates: list[Any]


async def lexical_path(
    conn: Any, svc: MemoryService, f: reads.Filters, words: list[str], near: Any = None
) -> Lexical:
    if not words or svc.cache.guild(f.guild_id).storage == "metadata_only":
        return Lexical({}, [])
    rank = lexical.settings()
    counts = await reads.word_counts(conn, svc.dialect, words)
    chosen = [w for w in words if counts[w] < reads.COMMON_MATCHES] or words
    names = await svc.authors.names(conn, f.guild_id)
    named = {w: names[w] for w in chosen if w in names}
    authored = await reads.author_counts(conn, f, sorted(set().union(*named.values())))
    mean, docs = await reads.collection(conn, f)
    in_scope = await reads.scope_counts(conn, svc.dialect, f, chosen)
    df = {w: in_scope[w] + sum(authored.get(a, 0) for a in named.get(w, ())) for w in chosen}
    stats = lexical.Stats(max(docs, *df.values()), mean, df)
    weights = {w: stats.idf(w) for w in chosen}
    rows = await reads.fulltext_candidates(
        conn, svc.dialect, f, chosen, rank.candidates, near, weights
    )
    if named and all(w in named for w in chosen):  # only names: what those members wrote
        seen = {r.id for r in rows}
        for author in sorted(set().union(*named.values())):
            if f.author is None or f.author == author:
                by = await reads.recent(conn, replace(f, author=author), rank.candidates)
                rows += [r for r in by if r.id not in seen]
    own = {r.id: lexical.bm25(r.search_text, r.author_id, chosen, stats, named, rank) for r in rows}
    scored = {r.id: (r, own[r.id]) for r in rows}
    sources = sorted((i for i in own if own[i] > 0), key=lambda i: -own[i])[:NEIGHBOUR_SOURCES]
    if rank.neighbour_weight > 0 and sources and (named or len(sources) > 1):
        # A match that follows another match is credited with it (a reply is read with what
        # it answers); a message that does not match itself gains nothing: measured, those
        # only crowded the list (docs/benchmarks/memory-search.md).
        follows = await reads.followers(conn, sources)
        if named:  # a reply that matches only by its author's name is not a candidate yet
            for row in await reads.by_ids(conn, f, [i for i in follows if i not in own]):
                mine = lexical.bm25(row.search_text, row.author_id, chosen, stats, named, rank)
                if mine > 0:
                    own[row.id], scored[row.id] = mine, (row, mine)
        for nxt, prev in follows.items():
            if own.get(nxt, 0.0) > 0:
                row, score = scored[nxt]
                scored[nxt] = (row, score + rank.neighbour_weight * own[prev])
    return Lexical(scored, rows)


async def vector_path(
    conn: Any,
    svc: MemoryService,
    f: reads.Filters,
    embedded: tuple[str, Any],
    limit: int,
    *,
    exact: bool = False,
) -> vecsearch.Nearest:
    """Nearest messages by meaning to the query's ``(model, vector)``."""
    if not f.channel_ids or svc.cache.guild(f.guild_id).storage == "metadata_only":
        return vecsearch.Nearest()
    model, vector = embedded
    return await vecsearch.search(conn, svc, f, model, vector, limit, exact=exact)


async def hybrid(
    svc: MemoryService,
    f: reads.Filters,
    query: str,
    limit: int,
    actor: Any = None,
    *,
    only: str | None = None,
) -> tuple[list[tuple[Any, float, list[str]]], list[str]]:
    """(fused hits, the paths that ran). ``only``: ``fulltext`` or ``vector`` alone (the
    recall benchmark measures each path through this same code)."""
    all_words = query_words(query, svc.cache.guild(f.guild_id).redaction)
    words = lexical.content_words(all_words)[: reads.MAX_SEARCH_WORDS]
    query_embedding = None
    if f.channel_ids and only != "fulltext":
        query_embedding = await svc.vectors.query_vector(f.guild_id, query, actor)
    embedded = query_embedding.vector if query_embedding is not None else None
    near = None  # HNSW may answer: the full-text hits bring their distances to check it
    if embedded is not None and only is None:
        dims = int(embedded[1].shape[0])
        if vecsearch.may_be_approximate(svc.dialect, f, embedded[0], dims):
            near = reads.Near(embedded[0], dims, vecsearch.vector_literal(embedded[1]))
    wanted = limit * VECTOR_FACTOR

    async def fulltext() -> Any:
        async with reads.connection(svc.engine, svc.dialect) as conn:
            return await lexical_path(conn, svc, f, words, near)

    async def vector(exact: bool = False) -> Any:
        assert embedded is not None
        async with reads.connection(svc.engine, svc.dialect, transaction=True) as conn:
            return await vector_path(conn, svc, f, embedded, wanted, exact=exact)

    runs: dict[str, Callable[[], Awaitable[Any]]] = {}
    if only != "vector":
        runs["fulltext"] = fulltext
    if embedded is not None:
        runs["vector"] = vector
    try:
        found = dict(zip(runs, await asyncio.gather(*(r() for r in runs.values())), strict=True))
        if "fulltext" in found and "vector" in found:
            if vecsearch.walk_missed(found["vector"], found["fulltext"].candidates):
                # A full-text hit is nearer than HNSW's best: the walk missed the region.
                vecsearch.walk_misses += 1
                found["vector"] = await vector(exact=True)
    finally:
        if query_embedding is not None:  # its usage row, committed meanwhile: failed = said
            try:
                await query_embedding.recorded()
            except UsageNotRecorded as exc:
                raise ToolExecutionError(
                    "the usage of this search's query embedding could not be recorded "
                    f"({exc}), so its results were withheld; check that the database is "
                    "reachable and has space"
                ) from exc
    text = found.get("fulltext") or Lexical({}, [])
    near_rows: vecsearch.Nearest = found.get("vector") or vecsearch.Nearest()
    sims = near_rows.similarities()
    vector_hits = {r.id: (r, sims[r.id]) for r in near_rows}
    created = {i: hit[0].created_ms for i, hit in (text.scored | vector_hits).items()}
    fused = lexical.fuse(
        text.scored,
        vector_hits,
        len(near_rows) < wanted,
        created,
        limit,
        lexical.settings(),
        recency=asks_for_time(all_words),
    )
    return [(h.row, h.score, list(h.paths)) for h in fused], sorted(runs)
