"""``vectors.best``: one matrix product, best first, rows of another size skipped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from gigi_knowledge import vectors


def test_best_orders_by_cosine_and_skips_other_sizes() -> None:
    q = vectors.unit([1.0, 0.0, 0.0])
    rows = [
        SimpleNamespace(name="far", vector=vectors.encode(vectors.unit([0.0, 1.0, 0.0]))),
        SimpleNamespace(name="near", vector=vectors.encode(vectors.unit([0.9, 0.1, 0.0]))),
        SimpleNamespace(name="other model", vector=vectors.encode(np.ones(4, np.float32))),
        SimpleNamespace(name="same", vector=vectors.encode(q)),
        SimpleNamespace(name="opposite", vector=vectors.encode(-q)),
    ]
    got = vectors.best(q, rows)
    assert [r.name for _, r in got] == ["same", "near", "far", "opposite"]
    assert got[0][0] == np.float32(1.0).item() and got[-1][0] < 0
    assert vectors.best(q, []) == [] and vectors.best(q, rows[2:3]) == []


def test_best_with_a_limit_keeps_the_best_in_order() -> None:
    rng = np.random.default_rng(3)
    q = vectors.unit(rng.standard_normal(8))
    rows = [
        SimpleNamespace(i=i, vector=vectors.encode(vectors.unit(rng.standard_normal(8))))
        for i in range(50)
    ]
    full = vectors.best(q, rows)
    top = vectors.best(q, rows, 5)
    assert [r.i for _, r in top] == [r.i for _, r in full[:5]]
    assert [s for s, _ in full] == sorted((s for s, _ in full), reverse=True)


async def test_postgres_nearest_matches_numpy_over_the_same_rows(kernel: Any, model: Any) -> None:
    """On PostgreSQL semantic search orders by pgvector in the store; it must rank as the
    NumPy path does over the blobs (every vector row has both). SQLite has no such column."""
    import sqlalchemy as sa
    from gigi_knowledge.search.retriever import _pg_nearest
    from knowledge_fakes import classify, decision, extraction, signal
    from knowledge_helpers import enable, message, publish

    from gigi_core.retrieval import Scope

    await enable(kernel)
    model.always("classify", classify())
    texts = [
        "Postgres upgrade moves to Friday",
        "Billing invoices go out monthly",
        "Postgres backups run nightly",
    ]
    for t in texts:

        def reply(request: Any, t: str = t) -> Any:
            mid = request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]
            return extraction(
                decisions=[decision(t, [mid])], signals=[signal(f"Talk about {t}", [mid])]
            )

        model.on("extract", reply)
        await publish(kernel, message(f"we decided: {t.lower()}"))
    columns = [c["name"] for c in await _columns(kernel, "knowledge_embeddings")]
    if kernel.db.dialect != "postgresql":
        assert "embedding" not in columns
        return
    async with kernel.db.engine.connect() as conn:
        missing = await conn.scalar(
            sa.text("SELECT count(*) FROM knowledge_embeddings WHERE embedding IS NULL")
        )
        assert missing == 0
        rows = (
            await conn.execute(
                sa.text(
                    "SELECT source_type, source_id, vector, model FROM knowledge_embeddings "
                    "WHERE source_type IN ('decision', 'signal')"
                )
            )
        ).all()
        (emb_model,) = {r.model for r in rows}
        emb = await vectors.embed(kernel, "g1", ["postgres friday"])
        assert emb is not None
        q = emb[1][0]
        pg = await _pg_nearest(conn, Scope("g1", frozenset({"c1"})), ["c1"], emb_model, q, 4)
    numpy = vectors.best(q, list(rows), 4)
    assert [r.source_id for _, r in pg] == [r.source_id for _, r in numpy]
    assert [round(s, 4) for s, _ in pg] == [round(s, 4) for s, _ in numpy]


async def _columns(kernel: Any, table: str) -> list[dict[str, Any]]:
    import sqlalchemy as sa

    async with kernel.db.engine.connect() as conn:
        return await conn.run_sync(lambda c: sa.inspect(c).get_columns(table))


async def test_a_large_scope_is_searched_through_the_hnsw_index(
    kernel: Any, monkeypatch: Any
) -> None:
    """knowledge_0006: on PostgreSQL the semantic query over a scope past ``EXACT_MAX`` uses
    the partial HNSW index of its size (EXPLAIN says so) and still returns ``limit`` rows of
    the scope's channel; a small scope, or a size with no index, is exact. SQLite: no index."""
    import uuid

    import numpy as np
    import sqlalchemy as sa
    from gigi_knowledge import tables
    from gigi_knowledge.search import pgsearch

    from gigi_core.retrieval import Scope

    async with kernel.db.engine.connect() as conn:
        indexes = await conn.run_sync(
            lambda c: [i["name"] for i in sa.inspect(c).get_indexes("knowledge_embeddings")]
        )
    if kernel.db.dialect != "postgresql":
        assert not [i for i in indexes if "hnsw" in i]
        return
    assert {f"ix_knowledge_embeddings_hnsw_{d}" for d in (256, 768, 1024, 1536)} <= set(indexes)
    monkeypatch.setattr(pgsearch, "EXACT_MAX", 300)  # a big scope without a big test
    rng = np.random.default_rng(3)

    def row(channel: str, dims: int, i: int) -> dict[str, Any]:
        return vectors.with_pg(
            "postgresql",
            {
                "id": str(uuid.uuid4()),
                "guild_id": "g1",
                "source_type": "decision" if i % 2 else "signal",
                "source_id": str(uuid.uuid4()),
                "channel_id": channel,
                "author_id": "u1",
                "created_ms": 1_700_000_000_000 + i,
                "topic_tags": [],
                "model": "t:m",
                "dims": dims,
                "vector": vectors.encode(vectors.unit(rng.standard_normal(dims))),
            },
        )

    big = [row("c1", 256, i) for i in range(1500)]
    small = [row("c2", 256, i) for i in range(40)]
    odd = [row("c1", 64, i) for i in range(400)]  # a size with no index
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.insert(tables.embeddings), big + small + odd)
        await conn.exec_driver_sql("ANALYZE knowledge_embeddings")

    async def search(channel: str, dims: int) -> tuple[str, list[Any]]:
        q = vectors.unit(rng.standard_normal(dims))
        async with kernel.db.engine.begin() as conn:
            scope = Scope("g1", frozenset({channel}))
            sql, params = await pgsearch.pg_nearest_sql(conn, scope, [channel], "t:m", q, 8)
            chans = sa.bindparam("chans", expanding=True)
            plan = "\n".join(
                r[0]
                for r in await conn.execute(sa.text("EXPLAIN " + sql).bindparams(chans), params)
            )
            got = (await conn.execute(sa.text(sql).bindparams(chans), params)).all()
        pool = {"c1": big if dims == 256 else odd, "c2": small}[channel]
        exact = vectors.best(q, [SimpleNamespace(**r) for r in pool], 8)
        overlap = {r.source_id for r in got} & {r.source_id for _, r in exact}
        return plan, [got, overlap]

    plan, (got, overlap) = await search("c1", 256)
    assert "ix_knowledge_embeddings_hnsw_256" in plan, plan
    assert len(got) == 8 and len(overlap) >= 6  # approximate, and all of the scope's channel
    assert {r.source_id for r in got} <= {r["source_id"] for r in big}
    plan, (got, overlap) = await search("c2", 256)
    assert "hnsw" not in plan and len(overlap) == 8  # small: exact
    plan, (got, overlap) = await search("c1", 64)
    assert "hnsw" not in plan and len(overlap) == 8  # no index of that size: exact
    # A server whose pgvector predates iterative scans (< 0.8) stays exact: a filtered
    # index scan there could return fewer than k rows.
    assert pgsearch._iterative[str(kernel.db.engine.url)] is True  # the wheel's pgvector
    monkeypatch.setitem(pgsearch._iterative, str(kernel.db.engine.url), False)
    plan, (got, overlap) = await search("c1", 256)
    assert "hnsw" not in plan and len(overlap) == 8
