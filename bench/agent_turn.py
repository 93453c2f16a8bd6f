"""One scripted turn with three tool calls through Gigi's full runtime, beside pydantic-ai.

Gigi: policy, argument validation, execution, answer, with the run stored in an in-memory
SQLite database and in a SQLite file. pydantic-ai: the identical turn with FunctionModel
and three tools, in the same process. Targets: in-memory <= 0.1x, persisted <= 0.25x.
Needs `pip install pydantic-ai-slim` (not a test dependency).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

TURNS = 200


async def gigi_turns(database_url: str | None, n: int) -> list[float]:
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

    async with open_test_kernel(
        home, plugins=[], extra_plugins=[("bench", BenchTools())], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "bench")
        runtime = AgentRuntime(kernel, model=script)
        request = Request(
            actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="mention", text="go"
        )
        for _ in range(20):  # warm up: validators compiled, statements cached
            await runtime.handle(request)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            reply = await runtime.handle(request)
            times.append(time.perf_counter() - started)
        assert reply.status == "done" and len(reply.citations) == 3, reply
    return times


async def pydantic_ai_turns(n: int) -> list[float]:
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

    for _ in range(20):
        await agent.run("go")
    times = []
    for _ in range(n):
        started = time.perf_counter()
        result = await agent.run("go")
        times.append(time.perf_counter() - started)
    assert "GIGI" in result.output
    return times


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


def main() -> None:
    memory = asyncio.run(gigi_turns("sqlite+aiosqlite://", TURNS))
    persisted = asyncio.run(gigi_turns(None, TURNS))
    try:
        baseline = asyncio.run(pydantic_ai_turns(TURNS))
    except ImportError:
        baseline = None
    med = statistics.median
    print(f"agent turn: 3 tool calls + answer, median of {TURNS} turns")
    print(f"  gigi, run in in-memory SQLite: {med(memory) * 1000:.2f} ms")
    print(f"  gigi, run persisted to a SQLite file: {med(persisted) * 1000:.2f} ms")
    if baseline is None:
        print("  pydantic-ai not installed: pip install pydantic-ai-slim")
        return
    print(f"  pydantic-ai FunctionModel: {med(baseline) * 1000:.2f} ms")
    print(f"  ratio in-memory/pydantic-ai: {med(memory) / med(baseline):.2f} (target <= 0.10)")
    print(f"  ratio persisted/pydantic-ai: {med(persisted) / med(baseline):.2f} (target <= 0.25)")


if __name__ == "__main__":
    main()
