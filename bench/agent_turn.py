"""One scripted turn with three tool calls through Gigi's full runtime, beside pydantic-ai.

Gigi: policy, argument validation, execution, answer, under each run durability
(``gigi_core.agent.journal``): the run kept in memory and stored behind the reply
(``deferred``; the time its writes took afterwards is printed beside it), persisted to the
SQLite file before the reply (``turn``, the default), and written at every step (``step``). pydantic-ai: the
identical turn with FunctionModel and three tools, in the same process. The configurations
run interleaved in rounds, in a rotated order, so that drift of a shared machine and
cache effects of whoever ran before hit all of them alike.
Targets: in-memory <= 0.1x pydantic-ai, persisted <= 0.25x.
Needs `pip install pydantic-ai-slim` (the `bench` extra) for the baseline.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROUNDS = 5
TURNS = 100  # per round and configuration

CONFIGS = [  # label, durability, target ratio; every run ends up in a SQLite file
    ("run in memory, stored behind the reply (deferred)", "deferred", 0.10),
    ("run persisted before the reply (turn, the default)", "turn", 0.25),
    ("every step persisted (step)", "step", None),
]


@dataclass
class GigiBench:
    runtime: Any
    request: Any
    times: list[float] = field(default_factory=list)
    write_behind: float = 0.0  # seconds spent draining writes queued behind replies
    turns: int = 0

    async def round(self, n: int) -> None:
        for _ in range(n):
            started = time.perf_counter()
            reply = await self.runtime.handle(self.request)
            self.times.append(time.perf_counter() - started)
            assert reply.status == "done" and len(reply.citations) == 3, reply
        self.turns += n
        started = time.perf_counter()
        await self.runtime.kernel.db.writer.drain()
        self.write_behind += time.perf_counter() - started

    async def stored_runs(self) -> int:
        from sqlalchemy import func, select

        from gigi_core.store.agent_tables import AgentRun

        async with self.runtime.kernel.db.session() as s:
            return int(await s.scalar(select(func.count()).select_from(AgentRun)) or 0)


async def open_gigi(stack: AsyncExitStack, durability: str) -> GigiBench:
    from gigi_core import Actor, hookimpl
    from gigi_core.agent import Request
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.testing import open_test_kernel
    from gigi_core.testing.scripted import call, say

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-"))
    manifest = home / "bench.yaml"
    manifest.write_text(MANIFEST)

    class BenchTools:
        @hookimpl
        def register_manifests(self, register: Any) -> None:
            register(manifest)

        @hookimpl
        def register_tools(self, register: Any) -> None:
            register("bench.add", add)
            register("bench.upper", upper)
            register("bench.count", count)

    async def add(ctx: Any, a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    async def upper(ctx: Any, text: str) -> dict[str, str]:
        return {"text": text.upper()}

    async def count(ctx: Any, items: list[str]) -> dict[str, int]:
        return {"count": len(items)}

    async def script(request: Any, origin: Any, run_id: str) -> Any:
        tool_messages = sum(1 for m in request.messages if m.role == "tool")
        if tool_messages == 0:
            return call(
                ("bench__add", {"a": 2, "b": 3}),
                ("bench__upper", {"text": "gigi"}),
                ("bench__count", {"items": ["a", "b", "c"]}),
            )
        return say("2 + 3 is 5, GIGI, and 3 items.")

    kernel = await stack.enter_async_context(
        open_test_kernel(home, plugins=[], extra_plugins=[("bench", BenchTools())])
    )
    await kernel.enable_plugin("g1", "bench")
    runtime = AgentRuntime(kernel, model=script, durability=durability)
    request = Request(
        actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="mention", text="go"
    )
    bench = GigiBench(runtime, request)
    await bench.round(20)  # warm up: validators compiled, statements cached
    bench.times.clear()
    return bench


@dataclass
class Baseline:
    agent: Any
    times: list[float] = field(default_factory=list)

    async def round(self, n: int) -> None:
        for _ in range(n):
            started = time.perf_counter()
            result = await self.agent.run("go")
            self.times.append(time.perf_counter() - started)
        assert "GIGI" in result.output


async def open_pydantic_ai() -> Baseline:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("add", {"a": 2, "b": 3}),
                    ToolCallPart("upper", {"text": "gigi"}),
                    ToolCallPart("count", {"items": ["a", "b", "c"]}),
                ]
            )
        return ModelResponse(parts=[TextPart("2 + 3 is 5, GIGI, and 3 items.")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    async def add(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    @agent.tool_plain
    async def upper(text: str) -> dict[str, str]:
        return {"text": text.upper()}

    @agent.tool_plain
    async def count(items: list[str]) -> dict[str, int]:
        return {"count": len(items)}

    baseline = Baseline(agent)
    await baseline.round(20)  # warm up
    baseline.times.clear()
    return baseline


MANIFEST = """\
manifest_version: 1
plugin:
  name: bench
  version: 0.0.1
  description: Benchmark tools.
  data_statement: Stores nothing.
  capabilities:
    - {name: bench.use, description: Use the bench tools, default: everyone}
actions:
  - name: bench.add
    description: Add two integers.
    safety: read_only
    capability: bench.use
    args: {type: object, properties: {a: {type: integer}, b: {type: integer}}, required: [a, b], additionalProperties: false}
  - name: bench.upper
    description: Upper-case a text.
    safety: read_only
    capability: bench.use
    args: {type: object, properties: {text: {type: string}}, required: [text], additionalProperties: false}
  - name: bench.count
    description: Count items.
    safety: read_only
    capability: bench.use
    args: {type: object, properties: {items: {type: array, items: {type: string}}}, required: [items], additionalProperties: false}
"""


async def run() -> None:
    med = statistics.median
    async with AsyncExitStack() as stack:
        benches = [await open_gigi(stack, durability) for _, durability, _ in CONFIGS]
        try:
            baseline: Baseline | None = await open_pydantic_ai()
        except ImportError:
            baseline = None
        contenders: list[GigiBench | Baseline] = [*benches, *([baseline] if baseline else [])]
        for r in range(ROUNDS):  # each round in a rotated order: no one always goes first
            for contender in contenders[r % len(contenders) :] + contenders[: r % len(contenders)]:
                await contender.round(TURNS)
        print(f"agent turn: 3 tool calls + answer, median of {ROUNDS} x {TURNS} turns each")
        base = med(baseline.times) if baseline else None
        if base is not None:
            print(f"  pydantic-ai FunctionModel: {base * 1000:.2f} ms")
        for (label, durability, target), bench in zip(CONFIGS, benches, strict=True):
            stored = await bench.stored_runs()
            assert stored == bench.turns, (label, stored, bench.turns)  # nothing was dropped
            line = f"  gigi, {label}: {med(bench.times) * 1000:.2f} ms"
            if durability == "deferred":
                line += f" + {bench.write_behind / bench.turns * 1000:.2f} ms written behind"
            if base is not None:
                line += f"; ratio {med(bench.times) / base:.3f}"
                if target is not None:
                    line += f" (target <= {target:.2f})"
            print(line)
        if baseline is None:
            print("  pydantic-ai not installed: pip install pydantic-ai-slim")


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
