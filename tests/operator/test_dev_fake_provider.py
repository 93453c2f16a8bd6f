"""`gigi dev fake-provider`: a local OpenAI-compatible model, configured by two printed
commands, that makes a full agent turn without an account or the network."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

from gigi_core.cli.dev import FakeModel, parse_call, parse_turn, start_server
from gigi_core.testing import open_test_kernel


def chat(base_url: str, messages: list[dict], tools: int = 0) -> dict:
    body = {"model": "m", "messages": messages, "tools": [{}] * tools}
    response = httpx.post(f"{base_url}/chat/completions", json=body, timeout=10)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]


def test_scripted_turns_then_echo() -> None:
    seen: list[str] = []
    model = FakeModel(
        [parse_call('dice.roll {"sides": 6}'), parse_turn("Rolled.", "x")], seen.append
    )
    server = start_server("127.0.0.1", 0, model)
    try:
        first = chat(server.base_url, [{"role": "user", "content": "roll"}], tools=3)
        [call] = first["tool_calls"]
        assert call["function"]["name"] == "dice__roll"
        assert json.loads(call["function"]["arguments"]) == {"sides": 6}
        assert chat(server.base_url, [{"role": "user", "content": "x"}])["content"] == "Rolled."
        echo = chat(server.base_url, [{"role": "user", "content": "hello there"}])
        assert echo["content"] == "You said: hello there"
        tool = chat(server.base_url, [{"role": "tool", "content": '{"total": 4}'}])
        assert tool["content"] == 'The tool answered: {"total": 4}'
    finally:
        server.stop()
    assert seen[0] == "request 1 (chat): 1 messages, 3 tools offered -> dice__roll"
    assert seen[2].endswith("-> echo")


async def test_a_full_agent_turn_through_the_openai_plugin(tmp_path) -> None:
    from gigi_core import Actor
    from gigi_core.surfaces import Request

    server = start_server("127.0.0.1", 0, FakeModel([parse_call('dice.roll {"sides": 6}')]))
    try:
        async with open_test_kernel(tmp_path, plugins=["dice", "openai"]) as kernel:
            await kernel.enable_plugin("console", "dice")
            owner = "guild:console"
            await kernel.llm.add_credential(
                owner, "openai-compatible", "fake", "k", base_url=server.base_url
            )
            await kernel.llm.set_profile(owner, "chat", "fake", "fake-model")
            request = Request(
                actor=Actor(id="alice", is_admin=True),
                guild_id="console",
                channel_id="console",
                kind="console",
                text="roll a die",
            )
            reply = await kernel.agent.handle(request)
    finally:
        server.stop()
    assert reply.status == "done", reply
    assert [c.tool for c in reply.citations] == ["dice.roll"]
    assert reply.text.startswith("The tool answered: ") and '"faces"' in reply.text


def test_the_printed_commands_configure_it_for_gigi_ask(tmp_path) -> None:
    env = {
        **os.environ,
        "GIGI_HOME": str(tmp_path / "home"),
        "GIGI_LOAD_PLUGINS": "dice,openai",
        "PYTHONUNBUFFERED": "1",
    }
    env.setdefault("GIGI_SECRET_KEY", "")
    if not env["GIGI_SECRET_KEY"]:
        from gigi_core.store.sealing import generate_key

        env["GIGI_SECRET_KEY"] = generate_key()
    # `gigi dev` as main() builds it (registered here too, in case main.py does not yet).
    script = (
        "from gigi_core.cli import main\n"
        "from gigi_core.cli.main import cli\n"
        "from gigi_core.cli.dev import COMMANDS\n"
        "[cli.add_command(c) for c in COMMANDS if c.name not in cli.commands]\n"
        "main()\n"
    )
    gigi = [sys.executable, "-c", script]
    server = subprocess.Popen(
        [*gigi, "dev", "fake-provider", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while not lines or not lines[-1].startswith("Ctrl-C"):
            line = server.stdout.readline()
            assert line, server.stderr.read()
            lines.append(line.rstrip("\n"))
        assert lines[0].startswith("Fake OpenAI-compatible model on http://127.0.0.1:")
        commands = [x.strip() for x in lines if x.startswith("  ")]
        assert len(commands) == 2
        for command in commands:  # exactly as printed, through a shell
            shell = command.replace("gigi ", f"{sys.executable} -c {_quoted(script)} ", 1)
            done = subprocess.run(shell, shell=True, env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        ask = subprocess.run(
            [*gigi, "ask", "hello, fake model"], env=env, capture_output=True, text=True
        )
        assert ask.returncode == 0, ask.stderr
        assert ask.stdout.strip() == "You said: hello, fake model"
        assert "request 1 (chat):" in server.stdout.readline()
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=30)
    assert server.returncode == 0 and "Stopped." in out


def _quoted(script: str) -> str:
    import shlex

    return shlex.quote(script)


@pytest.mark.parametrize(
    "raw", ["", 'dice.roll {"sides": }', "dice.roll [1]"], ids=["empty", "bad-json", "not-object"]
)
def test_bad_calls_are_usage_errors(raw) -> None:
    import click

    with pytest.raises(click.BadParameter):
        parse_call(raw)


def structured(base_url: str, schema: dict, tools: int = 0) -> dict:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "does this need an answer?"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
        "tools": [{}] * tools,
    }
    response = httpx.post(f"{base_url}/chat/completions", json=body, timeout=10)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]


PRECHECK = {
    "type": "object",
    "properties": {"answer_needed": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["answer_needed"],
}


def test_a_routing_call_does_not_take_the_agents_scripted_call() -> None:
    """A schema-bound call without tools (a routing profile's) gets its own answers; the
    scripted tool call still reaches the agent's call that follows."""
    seen: list[str] = []
    turns = [parse_call('dice.roll {"sides": 6}'), parse_turn({"structured": {"x": 1}}, "t")]
    server = start_server("127.0.0.1", 0, FakeModel(turns, seen.append))
    try:
        assert json.loads(structured(server.base_url, PRECHECK)["content"]) == {"x": 1}
        default = json.loads(structured(server.base_url, PRECHECK)["content"])
        assert default == {"answer_needed": True}  # the schema's smallest answer: go on
        [call] = chat(server.base_url, [{"role": "user", "content": "roll"}], tools=2)["tool_calls"]
        assert call["function"]["name"] == "dice__roll"
        # An agent call bound to a schema (a persona's output) is still the agent's.
        persona = structured(server.base_url, PRECHECK, tools=1)["content"]
        assert persona.startswith("You said: ")
    finally:
        server.stop()
    assert [line.split(" -> ")[1] for line in seen] == [
        "scripted text",
        "schema default",
        "dice__roll",
        "echo",
    ]
    assert seen[1].startswith("request 2 (structured):")


def test_the_smallest_answer_follows_the_schema() -> None:
    from gigi_core.cli.fake_model import smallest

    schema = {
        "type": "object",
        "required": ["mode", "count", "tags", "when", "ratio"],
        "properties": {
            "mode": {"enum": ["all", "some"]},
            "count": {"type": "integer", "minimum": 2},
            "tags": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 2}},
            "when": {"anyOf": [{"type": "null"}, {"type": "string"}]},
            "ratio": {"type": ["number", "null"], "exclusiveMinimum": 0.5},
            "left_out": {"type": "string"},
        },
    }
    assert smallest(schema) == {
        "mode": "all",
        "count": 2,
        "tags": ["xx"],
        "when": None,
        "ratio": 1.5,
    }


def test_bad_structured_turns_name_the_option() -> None:
    import click

    from gigi_core.cli.dev import parse_structured

    with pytest.raises(click.BadParameter, match="--structured: not JSON"):
        parse_structured("{nope")
    with pytest.raises(click.BadParameter, match="has no other keys"):
        parse_turn({"structured": {}, "text": "x"}, "script turn 1")
