"""The knowledge pipeline's own cost per message, model time excluded.

    python bench/knowledge_pipeline.py [N]      # default 2,000 messages, SQLite (embedded default)

N messages go through ``kernel.publish`` → the observer (window, queue) → tier 1 → (tier 2 →
writes → tier 3) with an instant keyless model (``plugins/gigi-knowledge/tests``'s fake):
a busy channel's mix — 70 % routine (classified, nothing stored), 20 % a light note, 10 %
high signal (an extraction with a decision, an action, two entities, a relationship and a
note, embedded). Every ``kernel.llm.chat`` / ``embed`` call is timed and subtracted: what
is left is the pipeline's overhead (window, queue, validation, checks, SQL). Anchor in the
same run: one bare ``INSERT`` of a signal row in its own transaction.
Messages are processed one at a time (``GIGI_KNOWLEDGE_CONCURRENCY=1``) so that wall time
less model time is the pipeline's own per-message cost; the throughput with the default
five workers is printed beside it.
Target: overhead ≤ 1 ms per message (mean over the mix).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins" / "gigi-knowledge" / "tests"))


def mix(i: int) -> str:
    import os

    only = os.environ.get("KNOWLEDGE_BENCH_ONLY")  # routine | light | high: one kind alone
    if only:
        return only
    r = i % 10
    return "routine" if r < 7 else ("light" if r < 9 else "high")


def script(model: Any) -> None:
    from knowledge_fakes import action, classify, decision, entity, extraction, relation, signal

    def cls(request: Any) -> Any:
        focus = next(
            ln for ln in request.messages[-1].content.splitlines() if "(this message)" in ln
        )
        kind = focus.split('] "', 1)[1].split()[0]
        return {
            "routine": classify(high=False, categories=["routine"]),
            "light": classify(high=False, categories=["update"], entities=["billing"]),
            "high": classify(high=True),
        }[kind]

    def ext(request: Any) -> Any:
        mid = request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]
        ids = [mid]
        return extraction(
            # Distinct decisions (words of their own): similar pairs, which cost a model call
            # each for the contradiction check, are rare in a real channel.
            decisions=[
                decision(
                    f"Decision on {' '.join(f'w{int(mid) * 7 + k}' for k in range(4))}",
                    ids,
                    by=["u1"],
                )
            ],
            actions=[action(f"Follow up on topic {int(mid) % 50}", ids, owner="u1")],
            entities=[entity(f"Service {int(mid) % 30}", ids), entity("Postgres", ids, "tool")],
            relationships=[relation(f"Service {int(mid) % 30}", "Postgres", ids)],
            signals=[signal(f"Topic {int(mid) % 50} was discussed", ids)],
        )

    model.always("classify", cls)
    model.always("extract", ext)
    model.always("contradiction", {"contradicts": False})


async def main(n: int, concurrency: int) -> tuple[float, float]:
    import os

    os.environ["GIGI_KNOWLEDGE_CONCURRENCY"] = str(concurrency)
    import gigi_knowledge
    import sqlalchemy as sa
    from knowledge_fakes import KnowledgeFakePlugin

    from gigi_core import Actor
    from gigi_core.events import MessageCreated
    from gigi_core.testing import open_test_kernel

    fake = KnowledgeFakePlugin()
    script(fake.provider)
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-knowledge-"))
    async with open_test_kernel(
        home, plugins=["knowledge"], extra_plugins=[("kfake", fake)]
    ) as kernel:
        await kernel.enable_plugin("g1", "knowledge")
        await kernel.call_tool(
            "knowledge.enable",
            {"channel": "c1"},
            actor=Actor(id="a", is_admin=True),
            guild_id="g1",
            channel_id="c1",
        )
        model_ns = [0]
        llm = kernel.llm
        chat, embed = llm.chat, llm.embed

        async def timed_chat(*a: Any, **k: Any) -> Any:
            t = time.perf_counter_ns()
            try:
                return await chat(*a, **k)
            finally:
                model_ns[0] += time.perf_counter_ns() - t

        async def timed_embed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter_ns()
            try:
                return await embed(*a, **k)
            finally:
                model_ns[0] += time.perf_counter_ns() - t

        llm.chat, llm.embed = timed_chat, timed_embed  # type: ignore[method-assign]

        async def batch(start: int, count: int) -> float:
            t = time.perf_counter()
            svc = kernel.gigi_knowledge
            for i in range(start, start + count):
                if i % 50 == 0:
                    await kernel.events.drain()
                while len(svc.queue) > 400:  # noqa: ASYNC110 (never let the queue drop)
                    await asyncio.sleep(0.001)
                await kernel.publish(
                    MessageCreated(
                        guild_id="g1",
                        message_id=str(100_000 + i),
                        channel_id="c1",
                        author_id=f"u{i % 20}",
                        created_at=datetime.now(UTC),
                        text=f"{mix(i)} message number {i} about the billing work",
                    )
                )
            await kernel.events.drain()
            assert await gigi_knowledge.flush(kernel, 600)
            return time.perf_counter() - t

        await batch(0, 200)  # warm: connections, caches, the first entities
        model_ns[0] = 0
        wall = await batch(1000, n)
        model_s = model_ns[0] / 1e9
        svc = kernel.gigi_knowledge
        assert svc.queue.dropped == 0 and svc.fallbacks == 0, (svc.queue.dropped, svc.fallbacks)
        async with kernel.db.engine.connect() as conn:
            counts = {
                t: await conn.scalar(sa.text(f"SELECT count(*) FROM knowledge_{t}"))
                for t in ("signals", "decisions", "entities")
            }
        # Anchor: one bare signal INSERT in its own transaction, same store.
        from gigi_knowledge import tables

        t = time.perf_counter()
        for i in range(200):
            async with kernel.db.engine.begin() as conn:
                await conn.execute(
                    sa.insert(tables.signals).values(
                        id=f"anchor-{i:031d}",
                        guild_id="g9",
                        channel_id="c9",
                        signal_type="discussion",
                        summary="anchor",
                        participants=[],
                        tags=[],
                        related_entities=[],
                        occurred_ms=0,
                        confidence=0.5,
                        source_ref={},
                        extraction_model=None,
                        created_ms=0,
                    )
                )
        anchor_ms = (time.perf_counter() - t) / 200 * 1000
    overhead_ms = (wall - model_s) / n * 1000
    print(
        f"knowledge pipeline, SQLite, {n:,} messages (70% routine / 20% note / 10% extraction), "
        f"{concurrency} worker(s): wall {wall:.2f} s, in model calls {model_s:.2f} s; rows {counts}"
    )
    print(f"  anchor (one bare INSERT + commit): {anchor_ms:.3f} ms")
    return overhead_ms, n / wall


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    serial, _ = asyncio.run(main(count, 1))
    _, rate = asyncio.run(main(count, 5))
    print(f"overhead per message (model time excluded, serial): {serial:.3f} ms")
    print(f"throughput with 5 workers (instant model): {rate:,.0f} messages/s")
    print(f"target <= 1 ms: {'met' if serial <= 1 else 'NOT met'}")
