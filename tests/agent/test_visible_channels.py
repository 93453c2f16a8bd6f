"""``ctx.visible_channels()``: the surface's set reaches the handler on every path that runs a
tool (model turn, direct call, ``kernel.call_tool``, a confirmed call), asked once per call."""

from __future__ import annotations

import pytest

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import call, say

MANIFEST = """\
manifest_version: 1
plugin:
  name: seer
  version: 0.0.1
  description: Reports the channels it was told the caller sees.
  data_statement: Stores nothing.
  capabilities:
    - {name: seer.use, description: Use it, default: everyone}
actions:
  - {name: seer.look, description: Look, safety: read_only, capability: seer.use,
     args: {type: object, additionalProperties: false}}
  - {name: seer.write, description: Write, safety: write, capability: seer.use,
     args: {type: object, additionalProperties: false}}
"""

REQUESTER = Actor(id="u1")
ADMIN = Actor(id="boss", is_admin=True)


class Seer:
    def __init__(self, tmp_path) -> None:
        self.path = tmp_path / "seer.yaml"
        self.path.write_text(MANIFEST)
        self.seen: list[frozenset[str] | None] = []

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        register("seer.look", self.look)
        register("seer.write", self.look)

    async def look(self, ctx):
        first = await ctx.visible_channels()
        assert await ctx.visible_channels() is first  # asked of the surface once per call
        self.seen.append(first)
        return {"ok": True}


class Lister:
    """A surface's answer; counts how often it is asked."""

    def __init__(self, *ids: str) -> None:
        self.ids, self.asked = frozenset(ids), 0

    async def __call__(self) -> frozenset[str]:
        self.asked += 1
        return self.ids


@pytest.fixture
async def env(database_url, tmp_path):
    seer = Seer(tmp_path)
    async with open_test_kernel(
        tmp_path, extra_plugins=[("seer", seer)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "seer")
        yield kernel, seer


def request(actor: Actor, lister=None, kind="slash") -> Request:
    return Request(
        actor=actor, guild_id="g1", channel_id="c1", kind=kind, text="", visible_channels=lister
    )


async def test_a_model_turn_passes_the_set_to_the_tool(env) -> None:
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.testing.scripted import ScriptedModel

    kernel, seer = env
    lister = Lister("c1", "c2")
    model = ScriptedModel([call(("seer__look", {})), say("looked")])
    runtime = AgentRuntime(kernel, model=model)
    reply = await runtime.handle(request(REQUESTER, lister, kind="mention"))
    assert reply.status == "done"
    assert seer.seen == [frozenset({"c1", "c2"})] and lister.asked == 1


async def test_without_a_lister_the_tool_learns_the_surface_cannot_tell(env) -> None:
    kernel, seer = env
    await kernel.agent.direct(request(REQUESTER), "seer.look", {})
    outcome = await kernel.call_tool("seer.look", {}, actor=REQUESTER, guild_id="g1")
    assert outcome.status == "ok"
    assert seer.seen == [None, None]


async def test_kernel_call_tool_passes_the_set(env) -> None:
    kernel, seer = env
    await kernel.call_tool(
        "seer.look", {}, actor=REQUESTER, guild_id="g1", visible_channels=Lister("c9")
    )
    assert seer.seen == [frozenset({"c9"})]


async def test_a_confirmed_call_sees_the_requesters_channels_now_not_an_approvers(env) -> None:
    kernel, seer = env
    first = await kernel.agent.direct(request(REQUESTER, Lister("c1")), "seer.write", {})
    assert first.status == "awaiting_confirmation"
    await kernel.agent.confirm(first.run_id, REQUESTER, visible_channels=Lister("c1", "c3"))
    assert seer.seen == [frozenset({"c1", "c3"})]  # permissions at approval time
    second = await kernel.agent.direct(request(REQUESTER, Lister("c1")), "seer.write", {})
    await kernel.agent.confirm(second.run_id, ADMIN, visible_channels=Lister("c1", "staff"))
    assert seer.seen[1] is None  # the admin's view is not the requester's: keep to c1
