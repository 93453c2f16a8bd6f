"""The console surface driven with scripted stdin, on both backends; and `gigi run` end to end."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys

import pytest
from sqlalchemy import insert

from gigi_core import ConfigError
from gigi_core.agent.runs import new_run_row
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.store.agent_tables import AgentRun
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.toolbox import Toolbox


@pytest.fixture
async def env(database_url, tmp_path, monkeypatch):
    """A kernel with dice and the toolbox installed (nothing enabled); the operator is alice."""
    monkeypatch.setenv("USER", "alice")
    toolbox = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=["dice"], extra_plugins=[("box", toolbox)], database_url=database_url
    ) as kernel:
        yield kernel, toolbox


def surface(kernel, lines: list[str], runtime=None) -> tuple[ConsoleSurface, io.StringIO]:
    out = io.StringIO()
    stdin = io.StringIO("".join(line + "\n" for line in lines))
    return ConsoleSurface(kernel, runtime=runtime, stdin=stdin, stdout=out), out


async def drive(kernel, lines: list[str], runtime=None) -> str:
    console, out = surface(kernel, lines, runtime)
    await asyncio.wait_for(console.run(), 30)
    return out.getvalue()


def test_console_is_the_registered_default_surface() -> None:
    from gigi_core.plugins import DEFAULT_PLUGINS, LoadOptions, load_plugins

    assert "gigi_core.default_plugins.console" in DEFAULT_PLUGINS
    loaded = load_plugins(LoadOptions(load=frozenset()))
    assert loaded.registry.surfaces["console"] is ConsoleSurface
    assert loaded.registry.records["console"].source == "default"


async def test_help_plugins_enable_and_call(env) -> None:
    kernel, _ = env
    output = await drive(
        kernel, ["/help", "/plugins", "/enable dice", '/call dice.roll {"sides": 6}', "/quit"]
    )
    assert "guild console, channel console, you are alice (admin)" in output
    assert "/plugins shows the installed ones, /enable NAME turns one on" in output  # fresh hint
    assert "/call ACTION JSON" in output and "/confirm [RUN]" in output  # help
    assert "[off] dice 0.1.0: Roll dice. (dice.roll)" in output
    assert "[on ] permissions 0.1.0 (native)" in output
    assert "Enabled dice in guild console." in output
    assert "dice.roll →\n  faces" in output and "(run run_" in output
    assert output.rstrip().endswith("Bye.")
    assert "dice" in await kernel.plugin_state.enabled_plugins("console")
    last = await kernel.agent.runs.last(guild_id="console")
    assert last.actor_id == "alice" and last.status == "done"


async def test_no_hint_once_a_plugin_is_enabled(env) -> None:
    kernel, _ = env
    await kernel.enable_plugin("console", "dice")
    assert "/enable NAME turns one on" not in await drive(kernel, [])


async def test_plain_text_goes_to_the_agent(env) -> None:
    kernel, _ = env
    await kernel.enable_plugin("console", "dice")
    model = ScriptedModel([call(("dice__roll", {"sides": 6, "count": 2})), say("You rolled 2d6.")])
    output = await drive(kernel, ["roll 2d6 please"], AgentRuntime(kernel, model=model))
    assert "You rolled 2d6." in output and "dice.roll →\n  faces" in output
    # In the order it happened: the tool's result, then the model's text about it.
    assert output.index("dice.roll →") < output.index("You rolled 2d6.")
    assert "(run run_" in output and ": done)" in output
    assert model.requests[0].messages[-1].content == "roll 2d6 please"
    run = await kernel.agent.runs.last(guild_id="console")
    assert run.kind == "console" and run.actor_id == "alice"
    assert "dice__roll" in model.offered(0)


async def test_plain_text_without_a_provider_explains_and_call_still_works(env) -> None:
    kernel, _ = env
    await kernel.enable_plugin("console", "dice")
    output = await drive(kernel, ["hello?", '/call dice.roll {"sides": 4}'])
    assert "no chat model is configured for guild console" in output
    assert "gigi llm credential add --owner guild:console" in output  # how to add one
    assert "dice.roll →\n  faces" in output


async def test_call_that_needs_confirmation_then_confirm(env) -> None:
    kernel, toolbox = env
    await kernel.enable_plugin("console", "box")
    output = await drive(kernel, ["/call box.write {}", "/confirm"])
    assert "box.write is a write action and needs your confirmation" in output
    assert "confirm with `/confirm run_" in output
    assert ": awaiting_confirmation)" in output
    assert toolbox.ran == ["box.write"]
    assert output.count(": done)") == 1


async def test_confirm_and_trace_by_run_id(env) -> None:
    kernel, toolbox = env
    await kernel.enable_plugin("console", "box")
    console, out = surface(kernel, [])
    await console.handle_line("/call box.write {}")
    run_id = console.waiting
    assert run_id and toolbox.ran == []
    await console.handle_line(f"/confirm {run_id}")
    assert toolbox.ran == ["box.write"] and console.waiting is None
    await console.handle_line(f"/confirm {run_id}")  # twice: a readable error, runs once
    assert toolbox.ran == ["box.write"]
    await console.handle_line(f"/trace {run_id}")
    output = out.getvalue()
    assert "Error: " in output.split(f"(run {run_id}: done)")[1]
    assert f"run {run_id} [direct] done (completed) guild console actor alice" in output
    assert "tool box.write confirm -> needs_confirmation" in output
    assert "confirmation conf_" in output


async def test_reject_and_cancel(env) -> None:
    kernel, toolbox = env
    await kernel.enable_plugin("console", "box")
    output = await drive(kernel, ["/call box.write {}", "/reject", "/reject"])
    assert "box.write was rejected; nothing ran." in output
    rejected = output.split("awaiting_confirmation)")[1].split("(run ")[0]
    assert rejected.strip() == "box.write was rejected; nothing ran."  # said once
    assert "Nothing is waiting for a confirmation; use /reject RUN." in output
    console, out = surface(kernel, [])
    await console.handle_line("/call box.wipe {}")
    run_id = console.waiting
    await console.handle_line(f"/cancel {run_id}")
    await console.handle_line(f"/cancel {run_id}")
    assert f"Cancelled run {run_id}." in out.getvalue()
    assert f"Run {run_id} was not active; nothing changed." in out.getvalue()
    assert toolbox.ran == [] and console.waiting is None


async def test_trace_defaults_to_the_last_run(env) -> None:
    kernel, _ = env
    output = await drive(kernel, ["/trace", "/call plugins.enabled {}", "/trace", "/trace nope"])
    assert "Error: there are no agent runs yet" in output
    assert "[direct] done (completed) guild console actor alice" in output
    assert "tool plugins.enabled allow -> ok" in output
    assert "Error: no agent run 'nope'" in output


async def test_errors_are_sentences(env) -> None:
    kernel, _ = env
    output = await drive(
        kernel,
        [
            "/call dice.roll {bad",
            "/call dice.roll [1, 2]",
            "/call",
            '/call dice.roll {"sides": 6}',  # not enabled here
            "/enable dice",
            '/call dice.roll {"sides": 1}',
            "/call dice.rol {}",
            "/frobnicate",
            "/enable nope",
            "/disable box",
            "/disable dice",
        ],
    )
    assert "Error: the arguments are not valid JSON (" in output
    assert 'e.g. /call dice.roll {"key": "value"}' in output
    assert "Error: the arguments must be a JSON object, not list." in output
    assert "Usage: /call ACTION JSON" in output
    assert "Error: dice.roll denied: plugin dice is not enabled in this server" in output
    assert "Error: invalid arguments for dice.roll: sides:" in output
    assert (
        "Error: no loaded plugin declares the action 'dice.rol' (did you mean dice.roll?)" in output
    )
    assert "Unknown command /frobnicate. /help lists the commands." in output
    assert "Error: no loaded plugin is named 'nope'" in output
    assert "box was not enabled in guild console; nothing changed." in output
    assert "Disabled dice in guild console (its config is kept)." in output
    assert "Traceback" not in output


async def test_eof_exits_cleanly(env) -> None:
    kernel, _ = env
    output = await drive(kernel, ["/help"])  # no /quit: end of input ends the session
    assert output.rstrip().endswith("Bye.")
    console, out = surface(kernel, [])
    console.stdin.close()  # a closed stream reads as end of input too
    await asyncio.wait_for(console.run(), 10)
    assert out.getvalue().rstrip().endswith("Bye.")


async def test_interrupt_cancels_the_running_request_and_keeps_going(env) -> None:
    kernel, _ = env
    started = asyncio.Event()

    class Hanging:
        runs = kernel.agent.runs

        async def handle(self, request):
            row = new_run_row(
                "run_hanging", "req", "console", request.actor.id, request.guild_id, None
            )
            await kernel.db.writer.write(lambda conn: conn.execute(insert(AgentRun), row))
            started.set()
            await asyncio.sleep(3600)

    console, out = surface(kernel, ["please hang", "/help"], runtime=Hanging())
    task = asyncio.ensure_future(console.run())
    await asyncio.wait_for(started.wait(), 10)
    console._on_interrupt()  # what Ctrl-C calls in an interactive terminal
    await asyncio.wait_for(task, 10)
    output = out.getvalue()
    assert "(interrupted)" in output and "/call ACTION JSON" in output
    assert output.rstrip().endswith("Bye.")
    assert (await kernel.agent.runs.get("run_hanging")).status == "cancelled"


def test_gigi_run_starts_the_console(tmp_path) -> None:
    env = {**os.environ, "GIGI_HOME": str(tmp_path / "home"), "GIGI_LOAD_PLUGINS": "dice"}
    env.pop("GIGI_DISCORD_TOKEN", None)
    env.pop("GIGI_DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", "from gigi_core.cli import main; main()", "run"],
        input='/help\n/enable dice\n/call dice.roll {"sides": 6}\n/quit\n',
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Starting surface console." in result.stdout
    assert "/call ACTION JSON" in result.stdout
    assert "dice.roll →\n  faces" in result.stdout
    assert result.stdout.rstrip().endswith("Bye.")
    assert "Traceback" not in result.stderr


async def test_a_command_result_naming_a_job_says_how_to_follow_it(env) -> None:
    from gigi_core.agent.contracts import Citation, Reply

    kernel, _ = env
    console, out = surface(kernel, [])
    job = {"id": "job_42", "follow": True}
    console.show(Reply(text="Sync started.", citations=[Citation("x.sync", {"job": job})]))
    console.show(Reply(text="Not followed.", citations=[Citation("x.sync", {"job": "job_1"})]))
    text = out.getvalue()
    assert "Job job_42 is queued; `gigi jobs wait job_42` follows its progress." in text
    assert text.count("gigi jobs wait") == 1


async def test_results_print_as_fields_and_json_switches_to_raw(env) -> None:
    kernel, _ = env
    await kernel.enable_plugin("console", "dice")
    call_line = '/call dice.roll {"sides": 6, "count": 2}'
    output = await drive(kernel, [call_line, f"/json {call_line}", "/json", call_line])
    readable, once, switched = output.split("(run run_")[:3]
    assert "dice.roll →\n  faces  " in readable and "{" not in readable
    assert 'dice.roll → {"faces": [' in once  # /json LINE: raw for that line only
    assert "Results now print as raw JSON; /json switches back." in output
    assert 'dice.roll → {"faces": [' in switched.split("switches back.")[-1]


async def test_a_whole_bot_plugin_is_listed_apart_and_cannot_be_enabled(
    database_url, tmp_path
) -> None:
    """The web dashboard's manifest says per_server: false."""
    async with open_test_kernel(
        tmp_path, plugins=["dice", "web"], database_url=database_url
    ) as kernel:
        output = await drive(kernel, ["/plugins", "/enable web", "/quit"])
        assert "[n/a] web: nothing to enable here (The admin web dashboard" in output
        assert "[off] web" not in output and "[off] dice 0.1.0" in output
        assert "serves the whole bot: there is nothing to enable in a server" in output
        with pytest.raises(ConfigError, match="plugin web serves the whole bot"):
            await kernel.enable_plugin("console", "web")
        assert "web" not in await kernel.plugin_state.enabled_plugins("console")
