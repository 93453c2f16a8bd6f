"""A run's journal through the real runtime and store: durability modes, in-flight markers,
the GIGI_RUN_DURABILITY setting and cancellation, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from unittest.mock import ANY

import pytest
from sqlalchemy import create_engine, select, update

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.journal import state_ad
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.errors import ConfigError
from gigi_core.store.agent_tables import AgentRun, AgentRunStep
from gigi_core.store.sealing import Sealed
from gigi_core.store.tables import AuditEvent
from gigi_core.store.writer import Writer
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say

USER = Actor(id="u1")
MODES = ["step", "turn", "deferred"]

PROBE = """\
manifest_version: 1
plugin:
  name: probe
  version: 0.0.1
  description: Runs a test's code inside a tool call.
  data_statement: Stores nothing.
  capabilities:
    - {name: probe.use, description: Use the probe, default: everyone}
actions:
  - {name: probe.look, description: Read only, safety: read_only, capability: probe.use,
     args: {type: object}}
  - {name: probe.act, description: Has effects, safety: write, capability: probe.use,
     confirm: never, args: {type: object}}
"""


class Probe:
    """Two tools that record that they ran and await ``inside(ctx)`` when a test sets it."""

    def __init__(self, tmp_path) -> None:
        self.path = tmp_path / "probe.yaml"
        self.path.write_text(PROBE)
        self.ran: list[str] = []
        self.inside = None

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        register("probe.look", self._handler("probe.look"))
        register("probe.act", self._handler("probe.act"))

    def _handler(self, name: str):
        async def handler(ctx):
            self.ran.append(name)
            if self.inside is not None:
                await self.inside(ctx)
            return {"done": name}

        return handler


@pytest.fixture
async def probe_env(database_url, tmp_path):
    """A kernel with dice and probe enabled in g1, and a runtime factory with a script.

    ``wait=True`` (default) makes the model wait once per call, as a real provider does.
    """
    probe = Probe(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=["dice"], extra_plugins=[("probe", probe)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "dice")
        await kernel.enable_plugin("g1", "probe")

        def runtime(*turns, wait=True, **kwargs):
            model = ScriptedModel(list(turns))

            async def provider(*args):
                await asyncio.sleep(0)
                return await model(*args)

            return AgentRuntime(kernel, model=provider if wait else model, **kwargs), model

        yield kernel, probe, runtime


@pytest.fixture
def commits(monkeypatch):
    """The store writer's committed transactions, in order."""
    done: list[object] = []
    original = Writer._transaction

    async def counted(self, fn):
        result = await original(self, fn)
        done.append(result)
        return result

    monkeypatch.setattr(Writer, "_transaction", counted)
    return done


def ask(text: str = "go") -> Request:
    return Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text=text)


def tool_results(model, index: int) -> list[dict]:
    return [json.loads(m.content) for m in model.requests[index].messages if m.role == "tool"]


async def stored(kernel, run_id: str):
    """The run's row, steps and audit rows as the store holds them now (no drain)."""
    async with kernel.db.session() as s:
        run = await s.get(AgentRun, run_id)
        steps = [
            (st.step_index, st.kind, st.tool, st.status)
            for st in await s.scalars(
                select(AgentRunStep)
                .where(AgentRunStep.run_id == run_id)
                .order_by(AgentRunStep.step_index)
            )
        ]
        audits = [
            (a.kind, a.step_index, a.status, a.action)
            for a in await s.scalars(
                select(AuditEvent).where(AuditEvent.run_id == run_id).order_by(AuditEvent.id)
            )
        ]
    return run, steps, audits


async def stored_state(kernel, run_id: str) -> dict:
    """The run's sealed state as committed now (no drain): what a restart would resume."""
    async with kernel.db.session() as s:
        run = await s.get(AgentRun, run_id)
    sealed = Sealed(run.state_key_id, run.state_nonce, run.state_sealed, "")
    return json.loads(kernel.state_sealer.open(sealed, state_ad(run_id)))


def committed_status(kernel, run_id: str) -> str | None:
    """Read the run's status synchronously: the event loop (and so the writer) cannot run."""
    db = kernel.db
    engine = db.sync_engine() if db.dialect == "sqlite" else create_engine(db.url)
    try:
        with engine.connect() as conn:
            return conn.scalar(select(AgentRun.status).where(AgentRun.id == run_id))
    finally:
        engine.dispose()


async def cancel_elsewhere(kernel, run_id: str) -> int:
    """What another process does to cancel a run: update its row (once the row is written)."""
    await kernel.db.writer.drain()
    async with kernel.db.session() as s:
        result = await s.execute(
            update(AgentRun)
            .where(AgentRun.id == run_id)
            .values(status="cancelled", termination_reason="cancelled")
        )
    return result.rowcount


# -- durability modes -----------------------------------------------------------------------


@pytest.mark.parametrize("durability", MODES)
async def test_every_durability_stores_the_same_finished_run(probe_env, durability) -> None:
    """step, turn and deferred all end with the same run, step and audit rows."""
    kernel, _, runtime = probe_env
    rt, _ = runtime(
        call(("dice__roll", {"sides": 6}), ("probe__look", {})),
        call(("probe__act", {})),
        say("done"),
        durability=durability,
    )
    reply = await rt.handle(ask())
    await kernel.db.writer.drain()
    run, steps, audits = await stored(kernel, reply.run_id)
    assert (run.status, run.termination_reason, run.finished_at is not None) == (
        "done",
        "completed",
        True,
    )
    assert (run.steps_used, run.tool_calls_used, run.llm_calls_used, run.tokens_used) == (
        6,
        3,
        3,
        45,
    )
    assert run.state_sealed is None  # a finished run keeps no resumable state
    assert steps == [
        (1, "llm", None, "ok"),
        (2, "tool", "dice.roll", "ok"),
        (3, "tool", "probe.look", "ok"),
        (4, "llm", None, "ok"),
        (5, "tool", "probe.act", "ok"),
        (6, "llm", None, "ok"),
    ]
    assert audits == [
        ("agent.plan", 1, "ok", None),
        ("agent.tool", 2, "ok", "dice.roll"),
        ("agent.tool", 3, "ok", "probe.look"),
        ("agent.plan", 4, "ok", None),
        ("agent.tool", 5, "ok", "probe.act"),
        ("agent.plan", 6, "ok", None),
        ("agent.answer", 6, "done", None),
    ]


@pytest.mark.parametrize(("durability", "transactions"), [("turn", 1), ("step", 5)])
async def test_a_turn_that_never_waits_is_written_once(
    probe_env, commits, durability, transactions
) -> None:
    """In turn mode a run whose model never waits is one transaction; step writes every step."""
    kernel, _, runtime = probe_env
    rt, _ = runtime(call(("probe__look", {})), say("done"), durability=durability, wait=False)
    commits.clear()
    reply = await rt.handle(ask())
    assert reply.status == "done"
    assert len(commits) == transactions


async def test_step_mode_stores_each_step_before_the_next_one_runs(probe_env) -> None:
    """With step durability a tool handler already finds the run row and every earlier step."""
    kernel, probe, runtime = probe_env
    seen = []

    async def look(ctx):
        run, steps, _ = await stored(kernel, ctx.run_id)
        seen.append((run and run.status, run and run.steps_used, [s[:2] for s in steps]))

    probe.inside = look
    rt, _ = runtime(
        call(("probe__look", {})), call(("probe__look", {})), say("ok"), durability="step"
    )
    await rt.handle(ask())
    assert seen == [
        ("running", 1, [(1, "llm")]),
        ("running", 3, [(1, "llm"), (2, "tool"), (3, "llm")]),
    ]


async def test_deferred_replies_before_the_run_is_stored(probe_env) -> None:
    """deferred returns the reply first; the run's last write lands later (a drain stores it)."""
    kernel, _, runtime = probe_env
    rt, _ = runtime(call(("probe__look", {})), say("done"), durability="deferred")
    reply = await rt.handle(ask())
    assert reply.status == "done"
    assert committed_status(kernel, reply.run_id) in (None, "running")
    await kernel.db.writer.drain()
    run, steps, _ = await stored(kernel, reply.run_id)
    assert run.status == "done" and len(steps) == 3


# -- calls with effects ---------------------------------------------------------------------


@pytest.mark.parametrize("durability", MODES)
async def test_a_call_with_effects_is_marked_in_flight_before_it_runs(
    probe_env, durability
) -> None:
    """Before a write runs, the stored state marks it; after a crash it is reported, not rerun."""
    kernel, probe, runtime = probe_env
    marked = []

    async def crash(ctx):
        marked.append((await stored_state(kernel, ctx.run_id))["in_flight"])
        raise SystemExit("the process died inside the call")

    probe.inside = crash
    rt, model = runtime(call(("probe__act", {})), say("Recovered."), durability=durability)
    with pytest.raises(SystemExit):
        await rt.handle(ask())
    assert marked == [{"id": ANY, "name": "probe__act", "action": "probe.act"}]
    probe.inside = None
    run = await rt.runs.last(guild_id="g1")
    reply = await rt.recover(run.id, USER)
    assert reply.status == "done" and reply.text == "Recovered."
    assert probe.ran == ["probe.act"]  # once, before the crash
    assert tool_results(model, 1) == [{"error": "interrupted by a restart; it was not retried"}]


# -- GIGI_RUN_DURABILITY ----------------------------------------------------------------------


async def test_an_unknown_durability_setting_is_a_config_error(probe_env, monkeypatch) -> None:
    """A typo in GIGI_RUN_DURABILITY fails loudly and names the variable to fix."""
    kernel, _, _ = probe_env
    monkeypatch.setenv("GIGI_RUN_DURABILITY", "sometimes")
    with pytest.raises(ConfigError, match="GIGI_RUN_DURABILITY.*sometimes"):
        AgentRuntime(kernel)


@pytest.mark.parametrize(
    ("value", "transactions"),
    [("step", 3), ("turn", 1), ("deferred", 0), (" Step ", 3), ("", 1)],
)
async def test_the_durability_setting_decides_when_a_run_is_written(
    probe_env, commits, monkeypatch, value, transactions
) -> None:
    """GIGI_RUN_DURABILITY is honoured: writes committed by the time the reply is returned."""
    kernel, _, runtime = probe_env
    monkeypatch.setenv("GIGI_RUN_DURABILITY", value)
    rt, _ = runtime(say("hi"), wait=False)
    commits.clear()
    await rt.handle(ask())
    assert len(commits) == transactions


async def test_an_explicit_durability_overrides_the_environment(
    probe_env, commits, monkeypatch
) -> None:
    """AgentRuntime(durability=...) wins over GIGI_RUN_DURABILITY."""
    kernel, _, runtime = probe_env
    monkeypatch.setenv("GIGI_RUN_DURABILITY", "deferred")
    rt, _ = runtime(say("hi"), wait=False, durability="step")
    commits.clear()
    await rt.handle(ask())
    assert len(commits) == 3


# -- cancellation ---------------------------------------------------------------------------


@pytest.mark.parametrize("durability", MODES)
async def test_cancel_during_a_call_stops_the_run_at_its_next_step(probe_env, durability) -> None:
    """runtime.cancel() of a run executing here ends it before the model is asked again, and
    its counters still match the step rows it stored."""
    kernel, probe, runtime = probe_env
    rt, model = runtime(call(("probe__look", {})), say("not reached"), durability=durability)

    async def cancel(ctx):
        assert await rt.cancel(ctx.run_id, USER)

    probe.inside = cancel
    reply = await rt.handle(ask())
    assert reply.status == "cancelled" and len(model.requests) == 1
    await kernel.db.writer.drain()
    run, steps, audits = await stored(kernel, reply.run_id)
    assert run.status == "cancelled"
    assert steps == [(1, "llm", None, "ok"), (2, "tool", "probe.look", "ok")]
    assert (run.steps_used, run.tool_calls_used, run.llm_calls_used) == (2, 1, 1)
    assert {("agent.plan", 1, "ok", None), ("agent.tool", 2, "ok", "probe.look")} <= set(audits)
    assert {a[2] for a in audits if a[0] == "agent.answer"} == {"cancelled"}
    assert rt.live == {}


@pytest.mark.parametrize("durability", MODES)
async def test_cancel_while_the_model_thinks_runs_none_of_its_calls(probe_env, durability) -> None:
    """A run cancelled while waiting for the model stops before the calls the model proposes."""
    kernel, probe, _ = probe_env
    model = ScriptedModel([call(("probe__look", {})), call(("probe__act", {})), say("no")])

    async def provider(request, origin, run_id):
        if model.requests:  # the second model call: the user cancels meanwhile
            assert await rt.cancel(run_id, USER)
        await asyncio.sleep(0)
        return await model(request, origin, run_id)

    rt = AgentRuntime(kernel, model=provider, durability=durability)
    reply = await rt.handle(ask())
    assert reply.status == "cancelled" and probe.ran == ["probe.look"]
    await kernel.db.writer.drain()
    run, steps, _ = await stored(kernel, reply.run_id)
    assert run.status == "cancelled"
    assert [s[:2] for s in steps] == [(1, "llm"), (2, "tool"), (3, "llm")]


async def test_a_run_cancelled_by_another_process_stops_at_its_next_step(probe_env) -> None:
    """step mode notices a cancel written by another process at the very next step."""
    kernel, probe, runtime = probe_env
    updated = []

    async def other_process(ctx):
        updated.append(await cancel_elsewhere(kernel, ctx.run_id))

    probe.inside = other_process
    rt, model = runtime(
        call(("probe__look", {})), call(("probe__look", {})), say("no"), durability="step"
    )
    reply = await rt.handle(ask())
    assert updated == [1]
    assert reply.status == "cancelled" and len(model.requests) == 1
    run, steps, audits = await stored(kernel, reply.run_id)
    assert run.status == "cancelled"
    assert steps == [(1, "llm", None, "ok"), (2, "tool", "probe.look", "ok")]
    assert ("agent.tool", 2, "ok", "probe.look") in audits


@pytest.mark.parametrize("durability", ["turn", "deferred"])
async def test_a_run_cancelled_elsewhere_never_starts_a_call_with_effects(
    probe_env, durability
) -> None:
    """turn/deferred notice an outside cancel at their next write, before any call with effects."""
    kernel, probe, runtime = probe_env
    updated = []

    async def other_process(ctx):
        if ctx.action.name == "probe.look":
            updated.append(await cancel_elsewhere(kernel, ctx.run_id))

    probe.inside = other_process
    rt, _ = runtime(
        call(("probe__look", {})), call(("probe__act", {})), say("no"), durability=durability
    )
    reply = await rt.handle(ask())
    assert updated == [1]
    assert reply.status == "cancelled" and probe.ran == ["probe.look"]
    await kernel.db.writer.drain()
    run, steps, _ = await stored(kernel, reply.run_id)
    assert run.status == "cancelled"
    assert [s[:3] for s in steps][:2] == [(1, "llm", None), (2, "tool", "probe.look")]
    assert "probe.act" not in {s[2] for s in steps}


@pytest.mark.parametrize("durability", MODES)
async def test_a_run_whose_task_is_cancelled_keeps_what_already_ran(probe_env, durability) -> None:
    """When the surface gives up (task cancelled), the steps so far and the interrupted one
    are stored, with the audits of what finished."""
    kernel, probe, _ = probe_env
    model = ScriptedModel([call(("probe__look", {}))])
    waiting = asyncio.Event()

    async def provider(request, origin, run_id):
        if model.requests:  # the second model call never answers
            waiting.set()
            await asyncio.Event().wait()
        await asyncio.sleep(0)
        return await model(request, origin, run_id)

    rt = AgentRuntime(kernel, model=provider, durability=durability)
    task = asyncio.create_task(rt.handle(ask()))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await kernel.db.writer.drain()
    run = await rt.runs.last(guild_id="g1")
    _, steps, audits = await stored(kernel, run.id)
    assert run.status == "running"  # left resumable for `gigi agent recover`
    assert steps == [
        (1, "llm", None, "ok"),
        (2, "tool", "probe.look", "ok"),
        (3, "llm", None, "cancelled"),
    ]
    assert audits == [("agent.plan", 1, "ok", None), ("agent.tool", 2, "ok", "probe.look")]
    assert (run.steps_used, run.tool_calls_used, run.llm_calls_used) == (3, 1, 2)
    assert rt.live == {}


# -- regression: a cancelled task, recovered, numbers its steps once ------------------------


@pytest.mark.parametrize("durability", MODES)
async def test_a_cancelled_task_then_recovered_numbers_each_step_once(
    probe_env, durability
) -> None:
    """Recovering a run whose task was cancelled neither repeats step numbers nor loses counts."""
    kernel, _, _ = probe_env
    model = ScriptedModel([call(("probe__look", {})), call(("probe__look", {})), say("ok")])
    waiting, hang = asyncio.Event(), [True]

    async def provider(request, origin, run_id):
        if model.requests and hang[0]:  # the second model call hangs until the task is cancelled
            waiting.set()
            await asyncio.Event().wait()
        await asyncio.sleep(0)
        return await model(request, origin, run_id)

    rt = AgentRuntime(kernel, model=provider, durability=durability)
    task = asyncio.create_task(rt.handle(ask()))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    hang[0] = False
    run = await rt.runs.last(guild_id="g1")
    assert (await rt.recover(run.id, USER)).status == "done"
    await kernel.db.writer.drain()
    run, steps, _ = await stored(kernel, run.id)
    assert [s[0] for s in steps] == list(range(1, len(steps) + 1))
    kinds = [s[1] for s in steps]
    assert (run.steps_used, run.tool_calls_used, run.llm_calls_used) == (
        len(steps),
        kinds.count("tool"),
        kinds.count("llm"),
    )
