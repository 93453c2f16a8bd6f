"""What ``kernel.publish`` costs a surface: one event, three enabled observers (target p99 ≤ 50 µs).

    python bench/events_publish.py            # both parts
    python bench/events_publish.py rates      # the sustained-rate part only

The surface pays only the publish call; routing, the database look-up of which plugins are
enabled (a cold cache on every new guild) and the observers run behind it. Compared in the
same run against the two obvious alternatives: putting the event on one ``asyncio.Queue``
(the floor) and calling the pluggy hook inline and awaiting every observer (what a surface
pays without per-plugin queues). Every published event is checked as delivered.

Second part, the whole path at a sustained rate: a surface publishing 1k, 3k, 10k and 30k
messages a second (in 1 ms ticks, 2 s per rate) to one synchronous observer (the shape of
memory's gate), and the process CPU time per message net of the same ticks idling (3 rounds
alternated, medians) - what
publish, router, observer queue and delivery cost together. Anchor in the same run: the
observer called inline from the same ticks (no kernel at all).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gigi_core import hookimpl
from gigi_core.events import MessageCreated

EVENTS = 20_000
ROUNDS = 5
GUILDS = 200  # a new guild every 100 events: the router's cache misses and reads the store

MANIFEST = """\
manifest_version: 1
plugin:
  name: {name}
  version: 0.1.0
  description: A benchmark observer.
  data_statement: Counts events in memory.
"""


class SyncCounter:
    """A synchronous observer, like memory's gate: the delivery path alone is measured."""

    def __init__(self, name: str, folder: Path) -> None:
        self.path = folder / f"{name}.yaml"
        self.path.write_text(MANIFEST.format(name=name))
        self.count = 0

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def observe_event(self, event: Any, kernel: Any) -> None:
        self.count += 1


class Counter:
    def __init__(self, name: str, folder: Path) -> None:
        self.path = folder / f"{name}.yaml"
        self.path.write_text(MANIFEST.format(name=name))
        self.count = 0

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    async def observe_event(self, event: Any, kernel: Any) -> None:
        self.count += 1
        await asyncio.sleep(0)  # a real observer yields at least once


def events(round_no: int) -> list[MessageCreated]:
    now = datetime.now(UTC)
    return [
        MessageCreated(
            guild_id=f"g{round_no}-{i * GUILDS // EVENTS}",
            message_id=str(i),
            channel_id="c1",
            author_id="u1",
            created_at=now,
            text="hello world, a message of ordinary length for a chat channel",
        )
        for i in range(EVENTS)
    ]


def percentiles(samples: list[int]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2] / 1000, ordered[int(len(ordered) * 0.99)] / 1000


async def run() -> None:
    from gigi_core.testing import open_test_kernel

    folder = Path(tempfile.mkdtemp(prefix="gigi-bench-events-"))
    observers = [Counter(f"obs{i}", folder) for i in range(3)]
    figures: dict[str, list[tuple[float, float]]] = {"publish": [], "queue": [], "inline": []}
    async with open_test_kernel(
        folder,
        plugins=[],
        extra_plugins=[(f"obs{i}", o) for i, o in enumerate(observers)],
        database_url=f"sqlite+aiosqlite:///{folder / 'bench.db'}",
    ) as kernel:
        for r in range(ROUNDS):
            batch = events(r)
            for guild in sorted({e.guild_id for e in batch}):
                for i in range(3):
                    await kernel.plugin_state.save(guild, f"obs{i}", enabled=True)
            kernel.events.invalidate()
            before = sum(o.count for o in observers)
            samples = []
            for event in batch:
                start = time.perf_counter_ns()
                await kernel.publish(event)
                samples.append(time.perf_counter_ns() - start)
                await asyncio.sleep(0)  # the gateway's loop turns over between messages
            figures["publish"].append(percentiles(samples))
            await kernel.events.drain()
            delivered = sum(o.count for o in observers) - before
            assert delivered == 3 * EVENTS, f"round {r}: {delivered} of {3 * EVENTS} delivered"

            queue: asyncio.Queue[Any] = asyncio.Queue()
            samples = []
            for event in batch:
                start = time.perf_counter_ns()
                queue.put_nowait(event)
                samples.append(time.perf_counter_ns() - start)
            figures["queue"].append(percentiles(samples))

            samples = []
            hook = kernel.pm.hook.observe_event
            for event in batch[: EVENTS // 10]:
                start = time.perf_counter_ns()
                await asyncio.gather(*hook(event=event, kernel=kernel))
                samples.append(time.perf_counter_ns() - start)
            figures["inline"].append(percentiles(samples))
    for name, label in (
        ("publish", "kernel.publish (router + 3 queues)"),
        ("queue", "asyncio.Queue.put_nowait (floor)"),
        ("inline", "inline pluggy hook, awaiting 3 observers"),
    ):
        p50 = statistics.median(f[0] for f in figures[name])
        p99 = statistics.median(f[1] for f in figures[name])
        worst = max(f[1] for f in figures[name])
        print(f"events  {label:44s} p50 {p50:6.2f} µs  p99 {p99:6.2f} µs (worst round {worst:.2f})")
    p99 = statistics.median(f[1] for f in figures["publish"])
    print(f"events  target p99 ≤ 50 µs: {'met' if p99 <= 50 else 'MISSED'} ({p99:.2f} µs)")


RATES = (1_000, 3_000, 10_000, 30_000)
RATE_SECONDS = 2.0
ROUNDS_PER_RATE = 3


async def ticking(n: int, rate: int, each: Any) -> float:
    """CPU seconds spent calling ``each(i)`` n times in 1 ms ticks at ``rate`` a second."""
    per_tick = max(1, rate // 1000)
    cpu = time.process_time()
    due = time.perf_counter()
    i = 0
    while i < n:
        for _ in range(min(per_tick, n - i)):
            await each(i)
            i += 1
        due += per_tick / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
    return time.process_time() - cpu


async def rates() -> None:
    from gigi_core.testing import open_test_kernel

    folder = Path(tempfile.mkdtemp(prefix="gigi-bench-events-rate-"))
    observer = SyncCounter("sync0", folder)
    shadow = SyncCounter("shadow", folder)  # the anchor's observer, called inline
    async with open_test_kernel(
        folder,
        plugins=[],
        extra_plugins=[("sync0", observer)],
        database_url=f"sqlite+aiosqlite:///{folder / 'bench.db'}",
    ) as kernel:
        await kernel.plugin_state.save("g1", "sync0", enabled=True)
        now = datetime.now(UTC)
        for rate in RATES:
            n = int(rate * RATE_SECONDS)
            batch = [
                MessageCreated(
                    guild_id="g1",
                    message_id=str(i),
                    channel_id=f"c{i % 10}",
                    author_id="u1",
                    created_at=now,
                    text="hello world, a message of ordinary length",
                )
                for i in range(n)
            ]
            before = observer.count

            async def publish(i: int, batch: list[MessageCreated] = batch) -> None:
                await kernel.publish(batch[i])

            async def idle(i: int) -> None:
                return None

            async def inline(i: int, batch: list[MessageCreated] = batch) -> None:
                shadow.observe_event(batch[i], kernel)

            path, anchor = [], []
            for _ in range(ROUNDS_PER_RATE):  # alternated: the machine's load moves
                idle_cpu = await ticking(n, rate, idle)
                spent = await ticking(n, rate, publish)
                cpu = time.process_time()
                await kernel.events.drain()
                spent += time.process_time() - cpu
                direct = await ticking(n, rate, inline)
                path.append((spent - idle_cpu) / n * 1e6)
                anchor.append((direct - idle_cpu) / n * 1e6)
            delivered = observer.count - before
            dropped = kernel.events.status()["sync0"]["dropped"]
            print(
                f"events  {rate:>6,}/s: publish -> router -> queue -> observer "
                f"{statistics.median(path):5.1f} µs/msg CPU (median of {ROUNDS_PER_RATE}); "
                f"inline call {statistics.median(anchor):5.1f} (anchor); "
                f"delivered {delivered:,} of {ROUNDS_PER_RATE * n:,}, dropped {dropped:,}"
            )


def main(only: str | None = None) -> None:
    if only != "rates":
        asyncio.run(run())
    asyncio.run(rates())


if __name__ == "__main__":
    import sys

    main(*sys.argv[1:2])
