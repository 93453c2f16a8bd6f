"""After a confirmation the run goes on with what its ASKER may read, never an approver's view.

An admin approving a member's write must not open the admin's channels to the rest of the
member's run (issue 28: admin approval -> ``look('staff')`` ran and went into a public answer);
and a restored run whose surface cannot say who reads the answer keeps to its own channel.
"""

from __future__ import annotations

from typing import Any

import pytest

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say

MEMBER = Actor(id="member")
ADMIN = Actor(id="boss", is_admin=True)
MANIFEST = """\
manifest_version: 1
plugin:
  name: spy
  version: 0.0.1
  description: Reads a channel back; writes one.
  data_statement: Stores nothing.
  capabilities:
    - {name: spy.use, description: Use it, default: everyone}
actions:
  - name: spy.look
    description: A channel's messages (default - the one asked in).
    safety: read_only
    capability: spy.use
    args:
      type: object
      properties:
        channel: {type: string, x-gigi-type: channel, maxLength: 64}
      additionalProperties: false
  - name: spy.write
    description: Write into a channel (default - the one asked in).
    safety: write
    capability: spy.use
    args:
      type: object
      properties:
        channel: {type: string, x-gigi-type: channel, maxLength: 64}
      additionalProperties: false
"""


class Spy:
    """Records which channel each executed call read or wrote."""

    def __init__(self, tmp_path: Any) -> None:
        self.path = tmp_path / "spy.yaml"
        self.path.write_text(MANIFEST)
        self.read: list[str] = []
        self.wrote: list[str] = []

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("spy.look", self.look)
        register("spy.write", self.write)

    async def look(self, ctx: Any, channel: str | None = None) -> dict[str, Any]:
        self.read.append(channel or ctx.channel_id)
        return {"text": f"the messages of {channel or ctx.channel_id}"}

    async def write(self, ctx: Any, channel: str | None = None) -> dict[str, Any]:
        self.wrote.append(channel or ctx.channel_id)
        return {"ok": True}


def sees(*channels: str):
    async def check(channel_id: str) -> bool:
        return channel_id in channels

    return check


def lists(*channels: str):
    async def listed() -> frozenset[str]:
        return frozenset(channels)

    return listed


MEMBER_SEES = ("general", "dev")  # the member may read these, not #staff
ADMIN_SEES = ("general", "dev", "staff")


@pytest.fixture
async def env(database_url, tmp_path):
    spy = Spy(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("spy", spy)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "spy")
        yield kernel, spy


def ask() -> Request:
    return Request(
        actor=MEMBER,
        guild_id="g1",
        channel_id="general",
        kind="mention",
        text="post it, then look around",
        channel_visible=sees(*MEMBER_SEES),
        visible_channels=lists(*MEMBER_SEES),
    )


async def paused(kernel: Any, *turns: Any) -> tuple[AgentRuntime, ScriptedModel, str]:
    model = ScriptedModel(list(turns))
    runtime = AgentRuntime(kernel, model=model)
    first = await runtime.handle(ask())
    assert first.status == "awaiting_confirmation", first.text
    return runtime, model, first.run_id


def last_tool_text(model: ScriptedModel) -> str:
    return str(model.requests[-1].messages[-1].content)


async def test_an_admins_approval_does_not_open_the_admins_channels(env) -> None:
    kernel, spy = env
    runtime, model, run_id = await paused(
        kernel,
        call(("spy__write", {})),
        call(("spy__look", {"channel": "staff"})),
        call(("spy__look", {})),
        say("done"),
    )
    reply = await runtime.confirm(
        run_id,
        ADMIN,
        channel_visible=sees(*ADMIN_SEES),
        visible_channels=lists(*ADMIN_SEES),
    )
    assert reply.status == "done"
    assert spy.wrote == ["general"]
    assert spy.read == ["general"]  # #staff was never read; the run's own channel was
    assert "staff" not in " ".join(str(c.result) for c in reply.citations)
    trace = await runtime.trace(run_id)
    reasons = [s.get("reason") for s in trace["steps"] if s.get("tool") == "spy.look"]
    assert any(r and r.startswith("policy_denied: channel_hidden") for r in reasons), reasons


async def test_the_asker_approving_keeps_their_own_check(env) -> None:
    kernel, spy = env
    runtime, model, run_id = await paused(
        kernel, call(("spy__write", {})), call(("spy__look", {"channel": "staff"})), say("no")
    )
    await runtime.confirm(
        run_id,
        MEMBER,
        channel_visible=sees(*MEMBER_SEES),
        visible_channels=lists(*MEMBER_SEES),
    )
    assert spy.read == []
    assert "cannot view that channel" in last_tool_text(model)


async def test_an_approved_call_keeps_the_channel_the_asker_could_read(env) -> None:
    """The approved call named #dev, which passed the asker's checks when it was proposed:
    an admin's approval runs it, and the run may read #dev again, but nothing else."""
    kernel, spy = env
    runtime, model, run_id = await paused(
        kernel,
        call(("spy__write", {"channel": "dev"})),
        call(("spy__look", {"channel": "dev"})),
        call(("spy__look", {"channel": "staff"})),
        say("done"),
    )
    reply = await runtime.confirm(
        run_id, ADMIN, channel_visible=sees(*ADMIN_SEES), visible_channels=lists(*ADMIN_SEES)
    )
    assert reply.status == "done"
    assert spy.wrote == ["dev"] and spy.read == ["dev"]


async def test_never_more_than_the_approvers_own_view(env) -> None:
    """An approver who cannot read the approved call's channel any more does not run it."""
    kernel, spy = env
    runtime, model, run_id = await paused(
        kernel, call(("spy__write", {"channel": "dev"})), say("done")
    )
    await runtime.confirm(
        run_id, ADMIN, channel_visible=sees("general"), visible_channels=lists("general")
    )
    assert spy.wrote == []
    assert "no longer allowed: you cannot view that channel" in last_tool_text(model)


async def test_a_restored_run_without_a_lister_keeps_the_answer_to_its_channel(env) -> None:
    """The asker approves through a surface that checks channels but cannot say who reads
    the answer: the audience is the run's own channel only (fail closed)."""
    kernel, spy = env
    runtime, model, run_id = await paused(
        kernel, call(("spy__write", {})), call(("spy__look", {"channel": "staff"})), say("no")
    )
    await runtime.confirm(run_id, MEMBER, channel_visible=sees(*ADMIN_SEES))
    assert spy.read == []
    assert "not everyone who will see this answer" in last_tool_text(model)
