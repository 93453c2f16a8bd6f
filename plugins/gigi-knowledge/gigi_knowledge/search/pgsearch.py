"""The semantic path on PostgreSQL: the nearest knowledge vectors by pgvector's ``<=>``,
exact over a small scope, through the partial HNSW index of the query's size over a large
one (knowledge_0006). SQLite scores the blobs in NumPy instead (``vectors.best``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _ms(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


INDEXED_DIMS = frozenset({256, 768, 1024, 1536})  # partial HNSW indexes (knowledge_0006)
EXACT_MAX = 5_000  # vectors in scope searched exactly (btree + sort: ~30 ms at 1,024 dims)
EF_SEARCH = 100
ITERATIVE_FROM = (0, 8)  # pgvector's hnsw.iterative_scan (a filtered index scan fills k)
_iterative: dict[str, bool] = {}  # per database URL: does the server's pgvector have it?


async def iterative_scan(conn: Any) -> bool:
    """Whether the server's pgvector (>= 0.8) can keep scanning the index until the filter
    yields k rows; an older one stays exact (a filtered index scan could return fewer)."""
    key = str(conn.engine.url)
    if key not in _iterative:
        version = await conn.exec_driver_sql(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        )
        text = version.scalar() or "0"
        parts = tuple(int(p) for p in text.split(".")[:2] if p.isdigit())
        _iterative[key] = parts >= ITERATIVE_FROM
    return _iterative[key]


async def pg_nearest_sql(
    conn: Any, scope: Any, channels: list[str], model: str, qv: Any, limit: int
) -> tuple[str, dict[str, Any]]:
    """The statement for the ``limit`` nearest decision and note vectors by pgvector's
    cosine distance among rows of the query's size. A scope of at most ``EXACT_MAX`` vectors, or a
    size with no index, is searched exactly through the (guild, channel, model, dims) btree
    (``+ 0`` keeps the planner off HNSW); a larger one through the partial HNSW index of
    its size (the ``dims`` literal and the ``embedding::vector(N)`` expression are what let
    the planner use it), with an iterative scan so the channel filter still yields ``limit``
    rows."""
    import sqlalchemy as sa

    from gigi_knowledge import vectors

    dims = int(qv.shape[0])
    distance = f"(embedding::vector({dims}) <=> CAST(:q AS vector({dims})))"
    where = [
        "guild_id = :guild",
        "channel_id IN :chans",
        "model = :model",
        f"dims = {dims}",  # a literal: the partial index's predicate must be provable
        "source_type IN ('decision', 'signal')",
        "embedding IS NOT NULL",
    ]
    params: dict[str, Any] = {
        "guild": scope.guild_id,
        "chans": list(channels),
        "model": model,
        "q": vectors.pg_text(qv),
        "k": limit,
    }
    if (since := _ms(scope.since)) is not None:
        where.append("created_ms >= :since")
        params["since"] = since
    if (until := _ms(scope.until)) is not None:
        where.append("created_ms <= :until")
        params["until"] = until
    cond = " AND ".join(where)
    chans = sa.bindparam("chans", expanding=True)
    exact = dims not in INDEXED_DIMS
    if not exact:
        count = sa.text(
            f"SELECT count(*) FROM (SELECT 1 FROM knowledge_embeddings WHERE {cond} "
            f"LIMIT {EXACT_MAX + 1}) x"
        ).bindparams(chans)
        exact = (
            int(await conn.scalar(count, {k: v for k, v in params.items() if k != "q"}) or 0)
            <= EXACT_MAX
        )
    if not exact and not await iterative_scan(conn):
        exact = True
    if not exact:
        await conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = strict_order")
        await conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
        # Counted large: take the index even where the planner would scan and sort (it
        # prefers that up to ~10,000 rows, at several times the index's time).
        await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        await conn.exec_driver_sql("SET LOCAL enable_sort = off")
    order = f"{distance} + 0" if exact else distance
    sql = (
        f"SELECT source_type, source_id, 1 - {distance} AS score FROM knowledge_embeddings "
        f"WHERE {cond} ORDER BY {order} LIMIT :k"
    )
    return sql, params


async def nearest(
    conn: Any, scope: Any, channels: list[str], model: str, qv: Any, limit: int
) -> list[tuple[float, Any]]:
    """The ``limit`` nearest decision and note vectors, (score, row) best first."""
    import sqlalchemy as sa

    sql, params = await pg_nearest_sql(conn, scope, channels, model, qv, limit)
    stmt = sa.text(sql).bindparams(sa.bindparam("chans", expanding=True))
    rows = (await conn.execute(stmt, params)).all()
    return [(float(r.score), r) for r in rows]
