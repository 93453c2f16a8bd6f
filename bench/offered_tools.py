"""What a turn costs as the number of tools offered to the model grows: 10, 300 and 3,000.

The same turn as ``bench/agent_turn.py`` (3 tool calls + answer, durability ``turn``) through
the full runtime, in a guild where one plugin offers N read-only actions. Two models: one
that never yields (the run never waits, so nothing needs its state before the end) and one
that yields once per call, as every real provider does (the run's row, with its sealed
state naming every offered tool, goes out at that first wait). The anchor is the 10-tool
turn of the same model in the same run; the configurations run interleaved in rotated
rounds. Target: the turn's cost independent of the number of offered tools.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROUNDS = 15  # many short rounds: a burst of other work on the machine hits every config
TURNS = 40  # per round and configuration
COUNTS = (10, 300, 3000)
MODELS = ("never waits", "yields")
ANSWER = "Done: GIGI."

_HEAD = """\
manifest_version: 1
plugin:
  name: bench
  version: 1.0.0
  description: Benchmark tools.
  data_statement: Stores nothing.
  capabilities:
    - {name: bench.use, description: Use them, default: everyone}
actions:
  - {name: bench.add, description: Add two numbers, safety: read_only, capability: bench.use,
     args: {type: object, properties: {a: {type: integer}, b: {type: integer}}, required: [a, b],
            additionalProperties: false}}
  - {name: bench.upper, description: Upper-case a text, safety: read_only, capability: bench.use,
     args: {type: object, properties: {text: {type: string}}, required: [text],
            additionalProperties: false}}
  - {name: bench.count, description: Count items, safety: read_only, capability: bench.use,
     args: {type: object, properties: {items: {type: array, items: {type: string}}},
            required: [items], additionalProperties: false}}
"""
_FILLER = (
    "  - {{name: bench.tool_{i:04d}, description: Filler tool {i} offered to the model,"
    " safety: read_only, capability: bench.use, args: {{type: object, properties:"
    " {{text: {{type: string}}}}, additionalProperties: false}}}}\n"
)


def manifest(count: int) -> str:
    return _HEAD + "".join(_FILLER.format(i=i) for i in range(count - 3))


def _script(tool_results: int) -> Any:
    from gigi_core.testing.scripted import call, say

    if tool_results == 0:
        return call(
            ("bench__add", {"a": 2, "b": 3}),
            ("bench__upper", {"text": "gigi"}),
            ("bench__count", {"items": ["a", "b", "c"]}),
        )
    return say(ANSWER)


@dataclass
class Config:
    count: int
    model: str
    runtime: Any
    requests: Any
    times: list[float] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)  # each round's median
    turns: int = 0

    async def turn(self) -> float:
        started = time.perf_counter()
        reply = await self.runtime.handle(next(self.requests))
        took = time.perf_counter() - started
        assert reply.status == "done" and len(reply.citations) == 3, reply
        return took

    async def round(self, n: int) -> None:
        times = [await self.turn() for _ in range(n)]
        self.times += times
        self.rounds.append(statistics.median(times))
        self.turns += n
        await self.runtime.kernel.db.writer.drain()

    async def stored(self) -> tuple[int, int]:
        """Stored runs, and how many still hold a sealed state (none: every run ended)."""
        from sqlalchemy import func, select

        from gigi_core.store.agent_tables import AgentRun

        await self.runtime.kernel.db.writer.drain()
        async with self.runtime.kernel.db.session() as s:
            runs = await s.scalar(select(func.count()).select_from(AgentRun))
            sealed = await s.scalar(
                select(func.count()).select_from(AgentRun).where(AgentRun.state_sealed.is_not(None))
            )
        return int(runs or 0), int(sealed or 0)


async def open_config(stack: AsyncExitStack, count: int, model: str, warm: int = 10) -> Config:
    from gigi_core import Actor, hookimpl
    from gigi_core.agent import Request
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.testing import open_test_kernel

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-tools-"))
    path = home / "bench.yaml"
    path.write_text(manifest(count))

    async def add(ctx: Any, a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    async def upper(ctx: Any, text: str) -> dict[str, str]:
        return {"text": text.upper()}

    async def count_items(ctx: Any, items: list[str]) -> dict[str, int]:
        return {"count": len(items)}

    async def filler(ctx: Any, text: str = "") -> dict[str, str]:
        return {"text": text}

    class BenchTools:
        @hookimpl
        def register_manifests(self, register: Any) -> None:
            register(path)

        @hookimpl
        def register_tools(self, register: Any) -> None:
            register("bench.add", add)
            register("bench.upper", upper)
            register("bench.count", count_items)
            for i in range(count - 3):
                register(f"bench.tool_{i:04d}", filler)

    async def script(request: Any, origin: Any, run_id: str) -> Any:
        if model == "yields":
            await asyncio.sleep(0)
        return _script(sum(1 for m in request.messages if m.role == "tool"))

    kernel = await stack.enter_async_context(
        open_test_kernel(home, plugins=[], extra_plugins=[("bench", BenchTools())])
    )
    await kernel.enable_plugin("g1", "bench")
    runtime = AgentRuntime(kernel, model=script, durability="turn")
    requests = (
        Request(actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="mention", text="go")
        for _ in itertools.count()
    )
    config = Config(count, model, runtime, requests)
    offered = await kernel.policy.offerable(Actor(id="u1"), "g1")
    assert len([a for a in offered if a.plugin == "bench"]) == count, len(offered)
    for _ in range(warm):
        await config.turn()
    config.turns = warm
    await kernel.db.writer.drain()
    return config


async def run() -> list[Config]:
    async with AsyncExitStack() as stack:
        configs = [await open_config(stack, n, m) for m in MODELS for n in COUNTS]
        for r in range(ROUNDS):
            for config in configs[r % len(configs) :] + configs[: r % len(configs)]:
                await config.round(TURNS)
        for config in configs:
            runs, sealed = await config.stored()
            assert runs == config.turns, f"{runs} runs stored, {config.turns} turns ran"
            assert sealed == 0, f"{sealed} finished runs still hold a sealed state"
        return configs


def main() -> None:
    configs = asyncio.run(run())
    print(
        f"offered tools: one turn (3 tool calls + answer, durability turn), median of the "
        f"medians of {ROUNDS} rotated rounds x {TURNS} turns"
    )
    for model in MODELS:
        rows = [c for c in configs if c.model == model]
        anchor = statistics.median(rows[0].rounds)
        for c in rows:
            median = statistics.median(c.rounds)
            p90 = statistics.quantiles(c.times, n=10)[-1]
            print(
                f"  model {model:<11} {c.count:>5} tools: {median * 1000:.2f} ms "
                f"(p90 of turns {p90 * 1000:.2f} ms), {median / anchor:.2f} x the "
                f"{rows[0].count}-tool turn"
            )


if __name__ == "__main__":
    main()
