"""Runs offered thousands of tools: their state is sealed only when a write needs it, and a
run that waits (a confirmation, a crash) resumes with every tool it was offered."""

from __future__ import annotations

import asyncio
import json

import pytest

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.journal import state_ad
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.agent.state import COMPRESS_AT, RunState, ToolNames
from gigi_core.agent.toolset import Toolset
from gigi_core.store.agent_tables import AgentRun
from gigi_core.store.sealing import Sealed, generate_key
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say

USER = Actor(id="u1")
FILLERS = 1200
HEAD = """\
manifest_version: 1
plugin:
  name: many
  version: 0.0.1
  description: Offers thousands of tools.
  data_statement: Stores nothing.
  capabilities:
    - {name: many.use, description: Use them, default: everyone}
actions:
  - {name: many.write, description: Has effects, safety: write, capability: many.use,
     confirm: always, args: {type: object}}
  - {name: many.look, description: Read only, safety: read_only, capability: many.use,
     args: {type: object}}
"""
FILLER = (
    "  - {{name: many.tool_{i:04d}, description: Filler {i}, safety: read_only,"
    " capability: many.use, args: {{type: object}}}}\n"
)


class Many:
    """``many.write`` (always confirmed), ``many.look`` and thousands of read-only fillers."""

    def __init__(self, tmp_path) -> None:
        self.path = tmp_path / "many.yaml"
        self.path.write_text(HEAD + "".join(FILLER.format(i=i) for i in range(FILLERS)))
        self.ran: list[str] = []
        self.crash_in_look = False

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        register("many.write", self.write)
        register("many.look", self.look)
        for i in range(FILLERS):
            register(f"many.tool_{i:04d}", self.look)

    async def write(self, ctx):
        self.ran.append("write")
        return {"written": True}

    async def look(self, ctx):
        self.ran.append("look")
        if self.crash_in_look:
            raise SystemExit("the process died inside a read-only call")
        return {"seen": True}


def ask() -> Request:
    return Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text="go")


def yielding(model: ScriptedModel, seconds: float = 0.0):
    async def provider(*args):
        await asyncio.sleep(seconds)  # a real provider call waits: the run's row goes out here
        return await model(*args)

    return provider


def offered(model: ScriptedModel, index: int) -> set[str]:
    return {tool.name for tool in model.requests[index].tools}


async def stored_state(kernel, run_id: str) -> dict | None:
    await kernel.db.writer.drain()
    async with kernel.db.session() as s:
        run = await s.get(AgentRun, run_id)
    if run is None or run.state_sealed is None:
        return None
    sealed = Sealed(run.state_key_id, run.state_nonce, run.state_sealed, "")
    plain = json.loads(kernel.state_sealer.open(sealed, state_ad(run_id)))
    assert "tools" not in plain  # thousands of names are stored packed
    return RunState.from_json(plain).to_json()


async def test_a_confirmation_after_a_restart_offers_every_tool(database_url, tmp_path) -> None:
    """Paused for a confirmation, the process stops; a new one resumes with the full tool set."""
    many, key = Many(tmp_path), generate_key()
    options = {"plugins": [], "extra_plugins": [("many", many)], "database_url": database_url}
    async with open_test_kernel(tmp_path, secret_key=key, **options) as kernel:
        await kernel.enable_plugin("g1", "many")
        model = ScriptedModel([call(("many__write", {}))])
        rt = AgentRuntime(kernel, model=yielding(model))
        paused = await rt.handle(ask())
        assert paused.status == "awaiting_confirmation"
        everything = offered(model, 0)
        assert len({n for n in everything if n.startswith("many__")}) == FILLERS + 2
        state = await stored_state(kernel, paused.run_id)
        assert state is not None and set(state["tools"]) == everything
        assert state["awaiting"]["action"] == "many.write"
    async with open_test_kernel(tmp_path, secret_key=key, **options) as kernel:
        model = ScriptedModel([say("Written.")])
        rt = AgentRuntime(kernel, model=yielding(model))
        reply = await rt.confirm(paused.run_id, USER)
        assert (reply.status, reply.text) == ("done", "Written.")
        assert many.ran == ["write"]
        assert offered(model, 0) == everything  # the resumed run offers what it offered
        assert await stored_state(kernel, paused.run_id) is None  # ended: no state kept


async def test_a_crash_in_a_read_only_call_recovers_with_every_tool(database_url, tmp_path) -> None:
    """The row written at the run's first wait holds its state as of then, with every tool."""
    many = Many(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("many", many)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "many")
        model = ScriptedModel([call(("many__look", {})), say("Seen.")])
        rt = AgentRuntime(kernel, model=yielding(model))
        many.crash_in_look = True
        with pytest.raises(SystemExit):
            await rt.handle(ask())
        run = await rt.runs.last(guild_id="g1")
        state = await stored_state(kernel, run.id)
        everything = offered(model, 0)
        assert len({n for n in everything if n.startswith("many__")}) == FILLERS + 2
        assert state is not None and set(state["tools"]) == everything
        assert [m["role"] for m in state["messages"]] == ["system", "user"]  # as of the wait
        assert (state["step"], state["llm_calls"], state["pending"]) == (0, 0, [])
        many.crash_in_look = False
        model = ScriptedModel([call(("many__look", {})), say("Seen.")])
        reply = await AgentRuntime(kernel, model=yielding(model)).recover(run.id, USER)
        assert (reply.status, reply.text) == ("done", "Seen.")
        assert offered(model, 0) == everything


async def test_a_run_that_never_waits_never_seals_its_state(
    database_url, tmp_path, monkeypatch
) -> None:
    """No durable point, no wait: the state (every tool name) is never encoded or sealed."""
    many = Many(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("many", many)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "many")
        sealer, sealed = kernel.state_sealer, []
        original = sealer.seal

        def seal(plain, *args, **kwargs):
            sealed.append(len(RunState.from_json(json.loads(plain)).tools))
            return original(plain, *args, **kwargs)

        monkeypatch.setattr(sealer, "seal", seal)
        rt = AgentRuntime(kernel, model=ScriptedModel([call(("many__look", {})), say("ok")]))
        assert (await rt.handle(ask())).status == "done"
        assert sealed == []
        model = ScriptedModel([call(("many__look", {})), say("ok")])
        rt = AgentRuntime(kernel, model=yielding(model))
        assert (await rt.handle(ask())).status == "done"
        # Its row, queued at the first wait, was still lingering in the writer when the
        # run ended: the final write inserted the row instead, and nothing was sealed.
        assert sealed == []
        model = ScriptedModel([call(("many__look", {})), say("ok")])
        rt = AgentRuntime(kernel, model=yielding(model, 4 * kernel.db.writer.linger_seconds))
        assert (await rt.handle(ask())).status == "done"
        assert sealed == [len(model.requests[0].tools)]  # once: the row at the first wait
        assert sealed[0] > FILLERS
        await kernel.db.writer.drain()


def test_a_toolsets_names_are_built_once_and_cannot_change() -> None:
    """Shared by every run of the offer, so an in-place change would leak into other runs."""
    from gigi_core.manifest.models import ActionSpec

    specs = [ActionSpec(f"p.a{i}", "d", "read_only", "p.use", {"type": "object"}) for i in range(3)]
    toolset = Toolset.build(specs)
    names = toolset.names()
    assert names is toolset.names() and isinstance(names, ToolNames)
    assert names == {"p__a0": "p.a0", "p__a1": "p.a1", "p__a2": "p.a2"}
    with pytest.raises(TypeError):
        names["x"] = "y"
    with pytest.raises(TypeError):
        names.update(x="y")
    assert toolset.resolve("p.a1") is specs[1] and toolset.wire_for("p.a2") == "p__a2"
    assert toolset.without("p.a1").names() == {"p__a0": "p.a0", "p__a2": "p.a2"}


@pytest.mark.parametrize("count", [5, COMPRESS_AT, 3000])
def test_a_state_with_shared_names_reads_back_exactly(count: int) -> None:
    """Spliced from the names' cached encoding (packed for a large offer), read back whole."""
    from gigi_core.agent.journal import state_json

    names = ToolNames({f"w{i}": f"p.a{i}" for i in range(count)})
    state = RunState(
        run_id="r",
        mode="agent",
        request={"guild_id": "g1"},
        messages=[{"role": "user", "content": 'a "quote" \\ and ü'}],
        tools=names,
    )
    for _ in range(2):  # the second time from the cache
        text = state_json(state.to_json())
        assert RunState.from_json(json.loads(text)) == RunState.from_json(
            json.loads(json.dumps({**state.to_json(), "tools": dict(names)}))
        )
    packed = count >= COMPRESS_AT
    assert ('"tools_z"' in text, '"tools"' in text) == (packed, not packed)
    if count == 3000:
        assert len(text) * 2 < len(json.dumps(dict(names)))
