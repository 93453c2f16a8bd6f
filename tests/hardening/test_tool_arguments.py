"""Tool arguments: depth and size bounds for every shape, integers as int, short error details."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.errors import InvalidArguments
from gigi_core.llm.parsing import make_tool_call
from gigi_core.llm.types import ChatResponse, Usage
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.hardening.plugin_kit import Kit

USER = Actor(id="u1")
INTEGERS = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "many": {"type": "array", "items": {"type": "integer"}},
        "inner": {"type": "object", "properties": {"k": {"type": ["integer", "null"]}}},
        "text": {"type": "string", "maxLength": 50},
    },
}


def ask() -> Request:
    return Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text="hi")


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def object_shaped(name: str, arguments: dict) -> ChatResponse:
    """A tool call whose arguments arrive as an object (Anthropic ``input``, Gemini ``args``)."""
    made = make_tool_call("toolu_1", name, arguments, seen_ids=set())
    assert made.parse_error is None and made.arguments is not None
    return ChatResponse(
        provider="scripted",
        model="scripted",
        tool_calls=[made],
        finish_reason="tool_calls",
        usage=Usage(input_tokens=1, output_tokens=1),
    )


def fed_back(model: ScriptedModel, index: int) -> list[str]:
    return [m.content for m in model.requests[index].messages if m.role == "tool"]


@pytest.fixture
async def kernel(tmp_path):
    kit = Kit(tmp_path, args=INTEGERS)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("kit", kit)]) as k:
        await k.enable_plugin("g1", "kit")
        k.kit = kit  # type: ignore[attr-defined]
        yield k


@pytest.mark.parametrize("shape", ["json text", "object"])
async def test_deep_arguments_are_fed_back_not_an_internal_error(kernel, shape) -> None:
    deep = {"inner": nested(900)}
    first = call(("kit__echo", deep)) if shape == "json text" else object_shaped("kit__echo", deep)
    model = ScriptedModel([first, say("gave up")])
    reply = await AgentRuntime(kernel, model=model).handle(ask())
    assert (reply.status, reply.termination_reason, reply.text) == ("done", "completed", "gave up")
    [error] = fed_back(model, 1)
    assert "nested deeper than 32 levels" in error and len(error) < 600
    assert kernel.kit.seen == []


async def test_object_shaped_arguments_meet_the_size_cap(kernel) -> None:
    big = {"text": "x" * 10_000_000}
    model = ScriptedModel([object_shaped("kit__echo", big), say("ok")])
    reply = await AgentRuntime(kernel, model=model).handle(ask())
    assert reply.status == "done"
    [error] = fed_back(model, 1)
    assert "too large" in error and len(error) < 600
    assert sum(len(m.model_dump_json()) for m in model.requests[1].messages[-2:]) < 5_000


async def test_validation_errors_sent_to_the_model_are_truncated(kernel) -> None:
    model = ScriptedModel([call(("kit__echo", {"text": "y" * 500_000})), say("ok")])
    await AgentRuntime(kernel, model=model).handle(ask())
    [error] = fed_back(model, 1)
    assert "text:" in error and "fix the arguments and try again" in error
    assert len(error) < 700


async def test_direct_calls_are_bounded_too(kernel) -> None:
    with pytest.raises(InvalidArguments, match="nested deeper than 32 levels"):
        await kernel.call_tool("kit.echo", {"inner": nested(900)}, actor=USER, guild_id="g1")
    with pytest.raises(InvalidArguments, match="too large") as caught:
        await kernel.call_tool("kit.echo", {"x": ["z" * 1000] * 2000}, actor=USER, guild_id="g1")
    assert len(str(caught.value)) < 600
    with pytest.raises(InvalidArguments) as caught:
        await kernel.call_tool("kit.echo", {"text": "q" * 100_000}, actor=USER, guild_id="g1")
    assert len(str(caught.value)) < 600
    assert kernel.kit.seen == []


async def test_integer_typed_values_reach_handlers_as_int(kernel) -> None:
    args = {"n": 2.0, "x": 2.0, "many": [1.0, 3], "inner": {"k": 4.0}}
    outcome = await kernel.call_tool("kit.echo", args, actor=USER, guild_id="g1")
    got = kernel.kit.seen[-1]
    assert got == args
    assert type(got["n"]) is int and type(got["x"]) is float
    assert [type(v) for v in got["many"]] == [int, int] and type(got["inner"]["k"]) is int
    assert outcome.result["types"]["n"] == "int"
    model = ScriptedModel([call(("kit__echo", {"n": 7.0})), say("ok")])
    await AgentRuntime(kernel, model=model).handle(ask())
    assert type(kernel.kit.seen[-1]["n"]) is int


def test_cli_args_nested_30000_deep_exit_2(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")
    runner = CliRunner()

    def gigi(*args: str):
        return runner.invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    deep = "[" * 30_000 + "]" * 30_000
    result = gigi("tools", "call", "dice.roll", "--guild", "1", "--user", "2", "--args", deep)
    assert result.exit_code == 2, result.output
    assert "Error: --args" in result.output and "nested too deeply" in result.output
    assert gigi("plugins", "enable", "dice", "--guild", "1").exit_code == 0
    deep = json.dumps({"sides": 6, "x": nested(100)})
    result = gigi("tools", "call", "dice.roll", "--guild", "1", "--user", "2", "--args", deep)
    assert result.exit_code == 2, result.output
    assert "nested deeper than 32 levels" in result.output
