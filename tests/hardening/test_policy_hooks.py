"""Plugin policy hooks that raise or mutate, and observers that die after a call's effect."""

from __future__ import annotations

import json

import pytest

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.errors import PolicyDenied
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.hardening.plugin_kit import Kit

USER = Actor(id="u1")


def ask(text: str = "hi") -> Request:
    return Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text=text)


def tool_results(model: ScriptedModel, index: int) -> list[dict]:
    return [json.loads(m.content) for m in model.requests[index].messages if m.role == "tool"]


class BrokenCapabilities:
    @hookimpl
    def capabilities_for(self, actor, guild_id, kernel):
        raise RuntimeError("directory service down")


async def test_a_raising_capabilities_for_is_a_deny_with_a_reply(tmp_path) -> None:
    kit = Kit(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", kit), ("caps", BrokenCapabilities())]
    ) as kernel:
        await kernel.enable_plugin("g1", "kit")
        model = ScriptedModel([say("I cannot use any tools right now.")])
        reply = await AgentRuntime(kernel, model=model).handle(ask())
        assert reply.status == "done" and reply.text == "I cannot use any tools right now."
        assert model.offered(0) == []  # nothing is offered on a failed policy check
        with pytest.raises(PolicyDenied, match="policy check failed"):
            await AgentRuntime(kernel, model=ScriptedModel([])).direct(ask(), "kit.echo", {})
        with pytest.raises(PolicyDenied, match="policy check failed"):
            await kernel.call_tool("kit.echo", {}, actor=USER, guild_id="g1")
        assert kit.seen == []


class Mutator:
    def __init__(self) -> None:
        self.errors: list[str] = []

    @hookimpl
    def check_tool_call(self, call, actor, action, kernel):
        for change in (
            lambda: call["args"].__setitem__("text", "mutated"),
            lambda: call["args"]["items"].append("smuggled"),
            lambda: call["args"].pop("text"),
            lambda: call.__setitem__("args", {"text": "replaced"}),
        ):
            try:
                change()
            except TypeError as exc:
                self.errors.append(str(exc))
        assert json.loads(json.dumps(call["args"])) == {"text": "hi", "items": ["a"]}
        return None


ITEMS_ARGS = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "items": {"type": "array"}},
}


async def test_check_tool_call_gets_a_read_only_copy(tmp_path) -> None:
    kit, mutator = Kit(tmp_path, args=ITEMS_ARGS), Mutator()
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", kit), ("mutator", mutator)]
    ) as kernel:
        await kernel.enable_plugin("g1", "kit")
        args = {"text": "hi", "items": ["a"]}
        await kernel.call_tool("kit.echo", args, actor=USER, guild_id="g1")
        model = ScriptedModel([call(("kit__echo", args)), say("done")])
        assert (await AgentRuntime(kernel, model=model).handle(ask())).status == "done"
    assert kit.seen == [args, args]
    assert len(mutator.errors) == 8 and all("read-only" in e for e in mutator.errors)


class DiesAfterTheCall:
    @hookimpl
    def after_tool_call(self, call, actor, outcome, kernel):
        raise SystemExit("the process died in an after_tool_call observer")


async def test_an_outcome_is_recorded_before_observers_run(tmp_path) -> None:
    kit = Kit(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", kit), ("dies", DiesAfterTheCall())]
    ) as kernel:
        await kernel.enable_plugin("g1", "kit", allow_external=True)
        model = ScriptedModel([call(("kit__act", {})), say("Recovered.")])
        runtime = AgentRuntime(kernel, model=model)
        with pytest.raises(SystemExit):
            await runtime.handle(ask())
        assert kit.acted == 1
        kernel.pm.unregister(name="dies")
        run = await runtime.runs.last(guild_id="g1")
        reply = await runtime.recover(run.id, USER)
    assert reply.status == "done" and reply.text == "Recovered."
    assert kit.acted == 1
    assert tool_results(model, 1) == [{"done": True}]  # not "interrupted by a restart"
