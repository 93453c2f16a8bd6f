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
    from gigi_knowledge.retriever import _pg_nearest
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
