"""The vector path of ``memory.search``: nearest segments of one model, then their messages.

PostgreSQL: a scope with at most ``EXACT_MAX`` segments is searched exactly through the
channel btree (``ORDER BY (distance) + 0`` keeps the planner off HNSW: recall 1.0, a few
ms); a bigger one through the partial HNSW index of its dimension with
``hnsw.iterative_scan = relaxed_order`` (a filtered HNSW scan would otherwise return too
few rows); when HNSW still brings back fewer than wanted above the similarity floor, the
exact search through the channel btree answers instead (an approximate walk can end among
rows that are all below the floor). A full HNSW answer can be wrong too: on clustered,
near-duplicate vectors the walk can settle in a region far from the query's neighbours and
return ``limit`` rows of it (seen: 3 queries in 5,077 on a 100k build, none of the exact ten,
best cosine 0.25-0.37 where exact had 0.51-0.63). The full-text path's hits carry their own
vector distance (``reads.Near``); one nearer than the answer's best by ``WALK_MARGIN`` proves
the walk missed, and ``tools.hybrid`` asks the exact search again (``exact=True``).
Dimensions without an index are always exact.

SQLite: exact cosine in NumPy over a per-channel matrix cached in process memory (bounded
by ``GIGI_MEMORY_VECTOR_CACHE_MB``), checked against the table before each use; why not
sqlite-vec is in docs/design-notes.md ("Memory vectors").

Either way only rows of the query's ``(model, dims)`` are read (no mixed dimensions), and
the messages are fetched with every read filter (guild, channels, deleted, retention,
author, period): a vector never brings back a message the reader may not see.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from gigi_memory.search import reads

if TYPE_CHECKING:
    from gigi_memory.service import MemoryService

EXACT_MAX = 20_000  # segments; exact search over this many takes ~15 ms on PostgreSQL
INDEXED_DIMS = frozenset({256})  # partial HNSW indexes (migrations/memory_0002)
EF_SEARCH = 200  # 100 left 3 of 5,077 queries with recall 0 on a 100k build: ~+2 ms p50
WALK_MARGIN = 0.05  # cosine by which a full-text hit must beat HNSW's best to prove a miss
#: Set (``SET LOCAL``-like) before an HNSW search: a filtered scan goes on until enough rows
#: pass (``relaxed_order``: the CTE re-sorts them).
HNSW_SETTINGS = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": str(EF_SEARCH)}
# Nearest segments read first per message wanted (most messages are one segment; widened
# x4 while filters or long messages leave too few): search's 40 candidates read 80, within
# EF_SEARCH, so HNSW needs no iterative extension for them.
FETCH_FACTOR = 2
THREAD_ROWS = 20_000  # a bigger NumPy scan runs on a worker thread: on the loop it holds
# up the full-text path running beside it (measured: a 100k scan inline, handler p50 +10 ms)
WIDEN_MAX = 20_000  # nearest segments read at most when the read filters reject many
RECHECK_SECONDS = 2.0  # how stale another process's new vectors may be (never a deleted one)
SIZE_SECONDS = 300.0  # how long a scope's size (exact or HNSW) is trusted: a probe costs
# a count of up to EXACT_MAX segments (~3-10 ms); a stale answer only picks the other,
# equally correct, way to search for a while
_sizes: dict[tuple[Any, ...], tuple[float, bool]] = {}  # scope -> (checked at, exact)
walk_misses = 0  # approximate answers a full-text hit proved wrong (process-wide; bench reports it)


def min_similarity() -> float:
    """Cosine below which a neighbour is noise (tuned on the local embedder: unrelated
    messages score about 0-0.1, related ones 0.2 and up); ``GIGI_MEMORY_MIN_SIMILARITY``."""
    try:
        return float(os.environ.get("GIGI_MEMORY_MIN_SIMILARITY", "0.2"))
    except ValueError:
        return 0.2


def cache_limit_bytes() -> int:
    try:
        return max(16, int(os.environ.get("GIGI_MEMORY_VECTOR_CACHE_MB", "512"))) << 20
    except ValueError:
        return 512 << 20


def _scope(f: reads.Filters) -> str:
    if f.include_threads:
        return "(s.channel_id IN :chans OR s.root_channel_id IN :chans)"
    return "s.channel_id IN :chans"


class Nearest(list[Any]):
    """The vector path's rows, best first; ``approximate`` when HNSW found them (each row
    then has ``distance``), so they may be checked (``walk_missed``). ``cosines``: row id
    -> cosine where the rows carry no ``distance`` (SQLite's NumPy scan)."""

    approximate: bool = False
    cosines: dict[int, float] | None = None

    def similarities(self) -> dict[int, float]:
        """Row id -> cosine similarity, what search's score fusion weighs."""
        if self.cosines is not None:
            return self.cosines
        return {r.id: 1.0 - float(r.distance) for r in self}


async def search(
    conn: Any,
    svc: MemoryService,
    f: reads.Filters,
    model: str,
    vector: Any,
    limit: int,
    *,
    exact: bool = False,
) -> Nearest:
    """Messages nearest to ``vector`` (best first), at most ``limit``; ``exact`` never uses
    HNSW (the answer when a check proved a walk wrong)."""
    if svc.dialect == "postgresql":
        return await _postgres(conn, f, model, vector, limit, exact=exact)
    if svc.vector_cache is None:
        svc.vector_cache = VectorCache(lambda: svc.vectors.generation)
    rows, cosines = await svc.vector_cache.search(conn, f, model, vector, limit)
    found = Nearest(rows)
    found.cosines = cosines
    return found


def may_be_approximate(dialect: str, f: reads.Filters, model: str, dims: int) -> bool:
    """Whether this scope's vector search may go through HNSW (unknown size: yes), so the
    full-text hits should carry their distances (``reads.Near``) for ``walk_missed``."""
    if dialect != "postgresql" or dims not in INDEXED_DIMS:
        return False
    known = _sizes.get((f.guild_id, f.channel_ids, f.include_threads, model, dims, EXACT_MAX))
    return known is None or time.monotonic() - known[0] >= SIZE_SECONDS or not known[1]


def walk_missed(nearest: list[Any], witnesses: list[Any]) -> bool:
    """True when a row found another way (with its own ``vdist``) is nearer than the best of
    an approximate answer by ``WALK_MARGIN``: exact search would have ranked it first, so
    the walk ended in the wrong region, not merely missed a neighbour or two."""
    if not getattr(nearest, "approximate", False) or not nearest:
        return False
    bound = nearest[0].distance - WALK_MARGIN
    return any(getattr(w, "vdist", None) is not None and w.vdist < bound for w in witnesses)


def vector_literal(vector: Any) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


# -- PostgreSQL ------------------------------------------------------------------------------------


async def _postgres(
    conn: Any, f: reads.Filters, model: str, vector: Any, limit: int, *, exact: bool = False
) -> Nearest:
    dims = int(vector.shape[0])
    where, params, binds = reads._where(f)
    params |= {
        "model": model,
        "dims": dims,
        "q": vector_literal(vector),
        "k": limit * FETCH_FACTOR,  # a message may have several segments
        "cap": EXACT_MAX + 1,
    }
    seg = f"s.guild_id = :guild AND s.model = :model AND s.dims = :dims AND {_scope(f)}"
    exact = exact or dims not in INDEXED_DIMS
    size_key = (f.guild_id, f.channel_ids, f.include_threads, model, dims, EXACT_MAX)
    known = _sizes.get(size_key)
    if not exact and known is not None and time.monotonic() - known[0] < SIZE_SECONDS:
        exact = known[1]
    elif not exact:
        n = await conn.scalar(
            sa.text(
                f"SELECT count(*) FROM (SELECT 1 FROM memory_segments s WHERE {seg} LIMIT :cap) x"
            ).bindparams(*binds),
            params,
        )
        exact = int(n or 0) <= EXACT_MAX
        if len(_sizes) > 10_000:
            _sizes.clear()
        _sizes[size_key] = (time.monotonic(), exact)
    distance = f"(s.embedding::vector({dims}) <=> CAST(:q AS vector({dims})))"
    if not exact:
        await _hnsw_settings(conn)
        best = Nearest(
            await _nearest(conn, _statement(f, where, distance, distance), params, binds, limit)
        )
        if len(best) >= limit:
            best.approximate = True
            return best
        # Short: HNSW is approximate, and on clustered vectors its walk can end in a region
        # whose nearest rows are all below the floor while the query's true neighbours sit
        # in a part of the graph it never reached (seen with pgvector's default settings: 4
        # of the 48 rows it returned above the floor, where exact search had 10).
        # Whether the channel really has fewer above the floor only an exact search knows.
    order = f"{distance} + 0"  # not the HNSW expression: the btree and an exact sort
    return Nearest(
        await _nearest(conn, _statement(f, where, distance, order), params, binds, limit)
    )


def _statement(f: reads.Filters, where: str, distance: str, order: str) -> str:
    """The nearest segments first, on their own (so the planner keeps to the index it was
    meant to use), then their messages through every read filter."""
    seg = f"s.guild_id = :guild AND s.model = :model AND s.dims = :dims AND {_scope(f)}"
    return (
        f"WITH near AS MATERIALIZED (SELECT s.message_row_id, {distance} AS distance "
        f"FROM memory_segments s WHERE {seg} ORDER BY {order} LIMIT :fetch) "
        f"SELECT {reads.MESSAGE_COLUMNS}, near.distance FROM near "
        f"JOIN memory_messages m ON m.id = near.message_row_id WHERE {where} "
        "ORDER BY near.distance LIMIT :k"
    )


async def _nearest(
    conn: Any, sql: str, params: dict[str, Any], binds: list[Any], limit: int
) -> list[Any]:
    """Up to ``limit`` messages above the floor, best first; the segment window widened
    while the read filters (author, period, deleted) or long messages left too few."""
    floor = 1.0 - min_similarity()
    fetch = limit * FETCH_FACTOR
    while True:
        params["fetch"] = fetch
        rows = (await conn.execute(sa.text(sql).bindparams(*binds), params)).all()
        near = [r for r in rows if r.distance is not None and r.distance <= floor]
        best = _best_per_message(sorted(near, key=lambda r: r.distance), limit)
        widen = len(near) == len(rows)  # none past the floor yet: nearer ones may be further on
        if len(best) >= limit or not widen or fetch >= WIDEN_MAX:
            return best
        fetch *= 4


async def _hnsw_settings(conn: Any) -> None:
    """``HNSW_SETTINGS`` for this transaction only (one round trip): a session setting would
    stay with the pooled connection for every later user of the kernel's engine, and behind
    PgBouncer might not reach the statement at all."""
    names = list(HNSW_SETTINGS)  # the code's own names (quoted literally), values bound
    await conn.execute(
        sa.text(
            "SELECT " + ", ".join(f"set_config('{n}', :v{i}, true)" for i, n in enumerate(names))
        ),
        {f"v{i}": HNSW_SETTINGS[n] for i, n in enumerate(names)},
    )


def _best_per_message(rows: list[Any], limit: int) -> list[Any]:
    seen: set[int] = set()
    out = []
    for row in rows:
        if row.id not in seen:
            seen.add(row.id)
            out.append(row)
            if len(out) == limit:
                break
    return out


# -- SQLite: exact search in NumPy -------------------------------------------------------------------


@dataclass
class Block:
    """One channel's segments of one model: ids, owners, times and the unit-vector matrix."""

    key: tuple[str, str, str, int]
    count: int
    top_id: int
    segment_ids: Any  # int64
    row_ids: Any  # int64 (memory_messages.id)
    authors: Any  # object (str)
    created: Any  # int64
    # float32 (dims, n): one row per dimension. The same vectors laid out this way score
    # 2-2.5x faster (OpenBLAS's sgemv reads them in the order it multiplies: 5.5 against
    # 13-15 ms for 100,000 x 256 here), and the scan was most of a SQLite search's vector path.
    columns: Any

    @property
    def nbytes(self) -> int:
        return int(self.columns.nbytes + self.row_ids.nbytes * 3 + self.authors.size * 8)


@dataclass
class VectorCache:
    """Per-channel matrices, re-checked against the table at most every ``RECHECK_SECONDS``
    (at once after this process changed segments: ``VectorService.generation``)."""

    generation: Any  # a callable returning the process's segment generation
    blocks: OrderedDict[tuple[str, str, str, int], Block] = field(default_factory=OrderedDict)
    scopes: dict[tuple[Any, ...], tuple[float, int, list[Any]]] = field(default_factory=dict)
    limit: int = field(default_factory=cache_limit_bytes)

    async def search(
        self, conn: Any, f: reads.Filters, model: str, vector: Any, limit: int
    ) -> tuple[list[Any], dict[int, float]]:
        """(rows, row id -> cosine of its nearest segment), best first."""
        import numpy as np

        dims = int(vector.shape[0])
        scope = (f.guild_id, f.channel_ids, f.include_threads, model, dims)
        seen = self.scopes.get(scope)
        now, gen = time.monotonic(), self.generation()
        blocks = None
        if seen is not None and seen[1] == gen and now - seen[0] < RECHECK_SECONDS:
            cached = [self.blocks.get(k) for k in seen[2]]
            if all(b is not None for b in cached):
                blocks = cached
        if blocks is None:
            blocks = await self._blocks(conn, f, model, dims)
            if len(self.scopes) > 10_000:
                self.scopes.clear()
            self.scopes[scope] = (now, gen, [b.key for b in blocks])
        if not any(b.count for b in blocks):
            return [], {}
        if sum(b.count for b in blocks) > THREAD_ROWS:  # ~1.2 ms per 20k rows: off the loop
            sims, row_ids = await asyncio.to_thread(_score, blocks, f, vector)
        else:
            sims, row_ids = _score(blocks, f, vector)
        want, floor = limit * 2, min_similarity()
        while True:  # the database filters drop deleted or expired rows: widen until enough
            k = min(want, sims.size)
            n = sims.size
            top = np.argpartition(sims, n - k)[n - k :] if k < n else np.arange(n)
            top = top[sims[top] >= floor]  # below the floor, or -inf: a filter ruled it out
            top = top[np.argsort(-sims[top], kind="stable")]
            cosines: dict[int, float] = {}
            for r, sim in zip(row_ids[top].tolist(), sims[top].tolist(), strict=True):
                cosines.setdefault(int(r), float(sim))  # best first: a message's nearest segment
            found = await _messages(conn, f, list(cosines))
            if len(found) >= limit or k >= sims.size or len(top) < k:
                rows = [found[i] for i in cosines if i in found][:limit]
                return rows, {r.id: cosines[r.id] for r in rows}
            want *= 4

    async def _blocks(self, conn: Any, f: reads.Filters, model: str, dims: int) -> list[Block]:
        _, params, binds = reads._where(f)
        params |= {"model": model, "dims": dims}
        seg = f"s.guild_id = :guild AND s.model = :model AND s.dims = :dims AND {_scope(f)}"
        stats = (
            await conn.execute(
                sa.text(
                    "SELECT s.channel_id AS channel, count(*) AS n, max(s.id) AS top "
                    f"FROM memory_segments s WHERE {seg} GROUP BY s.channel_id"
                ).bindparams(*binds),
                params,
            )
        ).all()
        out = []
        for stat in stats:
            key = (f.guild_id, stat.channel, model, dims)
            block = self.blocks.get(key)
            if block is None or (block.count, block.top_id) != (stat.n, stat.top):
                block = await self._load(conn, key, block, stat.n, stat.top)
            out.append(block)
        return out

    async def _load(
        self, conn: Any, key: tuple[str, str, str, int], old: Block | None, n: int, top: int
    ) -> Block:
        """Append rows newer than the cached ones, or reload the channel if any went away."""
        import numpy as np

        after = old.top_id if old is not None and n > old.count and top > old.top_id else 0
        result = await conn.execute(
            sa.text(
                "SELECT id, message_row_id, author_id, created_ms, embedding FROM memory_segments "
                "WHERE guild_id = :g AND channel_id = :c AND model = :m AND dims = :d AND id > :a "
                "ORDER BY id"
            ),
            {"g": key[0], "c": key[1], "m": key[2], "d": key[3], "a": after},
        )
        got = result.all()
        fresh = Block(
            key=key,
            count=len(got),
            top_id=got[-1].id if got else after,
            segment_ids=np.fromiter((r.id for r in got), np.int64, len(got)),
            row_ids=np.fromiter((r.message_row_id for r in got), np.int64, len(got)),
            authors=np.array([r.author_id for r in got], dtype=object),
            created=np.fromiter((r.created_ms for r in got), np.int64, len(got)),
            columns=np.ascontiguousarray(
                np.frombuffer(b"".join(r.embedding for r in got), dtype="<f4")
                .reshape(len(got), key[3])
                .T
            ),
        )
        if after and old is not None:
            fresh = Block(
                key=key,
                count=old.count + fresh.count,
                top_id=fresh.top_id,
                segment_ids=np.concatenate([old.segment_ids, fresh.segment_ids]),
                row_ids=np.concatenate([old.row_ids, fresh.row_ids]),
                authors=np.concatenate([old.authors, fresh.authors]),
                created=np.concatenate([old.created, fresh.created]),
                columns=np.concatenate([old.columns, fresh.columns], axis=1),
            )
            if fresh.count != n:  # rows went away as others came: start over
                return await self._load(conn, key, None, n, top)
        self.blocks[key] = fresh
        self.blocks.move_to_end(key)
        self._evict(keep=key)
        return fresh

    def _evict(self, keep: tuple[str, str, str, int]) -> None:
        total = sum(b.nbytes for b in self.blocks.values())
        for key in list(self.blocks):
            if total <= self.limit:
                break
            if key != keep:
                total -= self.blocks.pop(key).nbytes
        if total > self.limit:  # one channel bigger than the whole cache: used once, not kept
            self.blocks.pop(keep, None)


def _score(blocks: list[Block], f: reads.Filters, vector: Any) -> tuple[Any, Any]:
    """Cosine of every segment in scope (-inf where the author or period rules it out; the
    similarity floor is applied to the few selected, not to every score: no extra pass)."""
    import numpy as np

    scores, rows = [], []
    vector = vector.astype(np.float32, copy=False)
    for block in blocks:
        if block.count == 0:
            continue
        sims = vector @ block.columns
        mask = None
        if f.author is not None:
            mask = block.authors == f.author
        if f.since_ms is not None:
            mask = _and(mask, block.created >= f.since_ms)
        if f.until_ms is not None:
            mask = _and(mask, block.created < f.until_ms)
        if mask is not None:
            sims[~mask] = -np.inf
        scores.append(sims)
        rows.append(block.row_ids)
    if len(scores) == 1:
        return scores[0], rows[0]
    return np.concatenate(scores), np.concatenate(rows)


def _and(mask: Any, more: Any) -> Any:
    return more if mask is None else mask & more


async def _messages(conn: Any, f: reads.Filters, row_ids: list[int]) -> dict[int, Any]:
    """The rows among ``row_ids`` that pass every read filter, by id.

    The ids drive the join (SQLite's CROSS JOIN keeps that order): left to itself the planner
    may walk the channel index over every message instead of fetching 20 rows by id.
    """
    if not row_ids:
        return {}
    import json

    where, params, binds = reads._where(f)
    out: dict[int, Any] = {}
    for start in range(0, len(row_ids), 500):
        params["ids"] = json.dumps(row_ids[start : start + 500])
        sql = sa.text(
            f"SELECT {reads.MESSAGE_COLUMNS} FROM json_each(:ids) j "
            f"CROSS JOIN memory_messages m ON m.id = j.value WHERE {where}"
        ).bindparams(*binds)
        for row in await conn.execute(sql, params):
            out[row.id] = row
    return out
