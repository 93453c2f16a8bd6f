"""Confirmations: a confirmed call runs exactly once — double clicks, races, restarts, crashes."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner
from sqlalchemy import update

from gigi_core import Actor
from gigi_core.agent import Budgets, Request
from gigi_core.agent.confirmations import ConfirmationError
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.store.agent_tables import AgentRunConfirmation
from gigi_core.testing.scripted import call, say
from tests.toolbox import Toolbox

REQUESTER = Actor(id="u1")
STRANGER = Actor(id="u2")
ADMIN = Actor(id="boss", is_admin=True)


def direct_request(actor: Actor = REQUESTER) -> Request:
    return Request(actor=actor, guild_id="g1", channel_id="c1", kind="slash", text="")


async def pending_write(kernel) -> str:
    reply = await kernel.agent.direct(direct_request(), "box.write", {})
    assert reply.status == "awaiting_confirmation" and reply.components
    assert reply.components[0].action == "box.write"
    return reply.run_id


async def test_direct_call_waits_then_runs_once_on_confirm(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    assert toolbox.ran == []
    reply = await kernel.agent.confirm(run_id, REQUESTER)
    assert reply.status == "done" and reply.citations[0].result == {"done": "box.write"}
    assert toolbox.ran == ["box.write"]
    with pytest.raises(ConfirmationError, match="already"):
        await kernel.agent.confirm(run_id, REQUESTER)  # the double click
    assert toolbox.ran == ["box.write"]
    trace = await kernel.agent.trace(run_id)
    assert trace["status"] == "done" and trace["confirmations"][0]["state"] == "done"


async def test_concurrent_confirmations_execute_once(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    results = await asyncio.gather(
        kernel.agent.confirm(run_id, REQUESTER),
        kernel.agent.confirm(run_id, ADMIN),
        kernel.agent.confirm(run_id, REQUESTER),
        return_exceptions=True,
    )
    assert sum(1 for r in results if not isinstance(r, Exception)) == 1
    assert all(isinstance(r, ConfirmationError) for r in results if isinstance(r, Exception))
    assert toolbox.ran == ["box.write"]


async def test_only_requester_or_admin_may_decide(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    with pytest.raises(ConfirmationError, match="only the person who asked"):
        await kernel.agent.confirm(run_id, STRANGER)
    with pytest.raises(ConfirmationError, match="only the person who asked"):
        await kernel.agent.reject(run_id, STRANGER)
    await kernel.agent.confirm(run_id, ADMIN)
    assert toolbox.ran == ["box.write"]


async def test_reject_never_runs(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    reply = await kernel.agent.reject(run_id, REQUESTER)
    assert reply.termination_reason == "rejected" and "nothing ran" in reply.text
    assert toolbox.ran == []
    with pytest.raises(ConfirmationError):
        await kernel.agent.confirm(run_id, REQUESTER)
    assert toolbox.ran == []


async def test_expired_confirmation_fails_closed(env) -> None:
    kernel, toolbox, _ = env
    rt = AgentRuntime(kernel, budgets=Budgets(confirmation_ttl_seconds=-1))
    reply = await rt.direct(direct_request(), "box.write", {})
    with pytest.raises(ConfirmationError, match="expired"):
        await rt.confirm(reply.run_id, REQUESTER)
    assert toolbox.ran == []
    assert (await rt.trace(reply.run_id))["confirmations"][0]["state"] == "expired"


async def test_cancelled_run_cannot_be_confirmed(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    with pytest.raises(ConfirmationError, match="only the person who started"):
        await kernel.agent.cancel(run_id, STRANGER)
    assert await kernel.agent.cancel(run_id, REQUESTER) is True
    assert await kernel.agent.cancel(run_id, REQUESTER) is False
    with pytest.raises(ConfirmationError):
        await kernel.agent.confirm(run_id, REQUESTER)
    assert toolbox.ran == []


async def test_changed_arguments_fail_closed(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    async with kernel.db.session() as s:
        await s.execute(
            update(AgentRunConfirmation)
            .where(AgentRunConfirmation.run_id == run_id)
            .values(args_hash="0" * 64)
        )
    reply = await kernel.agent.confirm(run_id, REQUESTER)
    assert toolbox.ran == []
    assert reply.citations[0].result["error"].startswith("the action changed")
    assert (await kernel.agent.trace(run_id))["confirmations"][0]["state"] == "failed"


async def test_changed_manifest_version_fails_closed(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    async with kernel.db.session() as s:
        await s.execute(
            update(AgentRunConfirmation)
            .where(AgentRunConfirmation.run_id == run_id)
            .values(manifest_version="9.9")
        )
    await kernel.agent.confirm(run_id, REQUESTER)
    assert toolbox.ran == []


async def test_crash_during_execution_is_never_retried(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    async with kernel.db.session() as s:  # as if a process claimed and died mid-call
        await s.execute(
            update(AgentRunConfirmation)
            .where(AgentRunConfirmation.run_id == run_id)
            .values(state="executing")
        )
    with pytest.raises(ConfirmationError, match="never run twice"):
        await kernel.agent.confirm(run_id, REQUESTER)
    assert toolbox.ran == []


@pytest.mark.parametrize("operator_key", [True, False])
async def test_confirmation_after_restart(database_url, tmp_path, operator_key) -> None:
    """With GIGI_SECRET_KEY, or with the state key the kernel keeps in GIGI_HOME."""
    from gigi_core.kernel import Kernel
    from gigi_core.plugins import LoadOptions, load_plugins
    from gigi_core.store.sealing import Sealer, generate_key

    key = generate_key() if operator_key else None

    async def kernel_with(box):
        loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("box", box)])
        return await Kernel.open(
            database_url, tmp_path / "home", plugins=loaded, sealer=Sealer(key)
        )

    toolbox = Toolbox(tmp_path)
    async with await kernel_with(toolbox) as kernel:
        await kernel.enable_plugin("g1", "box")
        run_id = await pending_write(kernel)
    assert (tmp_path / "home" / "state.key").exists() is not operator_key
    restarted = Toolbox(tmp_path)
    async with await kernel_with(restarted) as kernel:
        reply = await kernel.agent.confirm(run_id, REQUESTER)
        assert reply.status == "done" and restarted.ran == ["box.write"]
        with pytest.raises(ConfirmationError):
            await kernel.agent.confirm(run_id, REQUESTER)
    assert toolbox.ran == [] and restarted.ran == ["box.write"]


async def test_agent_run_pauses_and_resumes_with_the_model(env) -> None:
    kernel, toolbox, runtime = env
    rt, model = runtime(
        call(("box__echo", {"text": "first"}), ("box__wipe", {}), ("box__echo", {"text": "after"})),
        say("Wiped, as you confirmed."),
    )
    request = Request(
        actor=REQUESTER, guild_id="g1", channel_id="c1", kind="mention", text="wipe it"
    )
    paused = await rt.handle(request)
    assert paused.status == "awaiting_confirmation" and toolbox.ran == ["box.echo"]
    assert "confirm" in paused.full_text()
    reply = await rt.confirm(paused.run_id, REQUESTER)
    assert reply.status == "done" and reply.text == "Wiped, as you confirmed."
    assert toolbox.ran == ["box.echo", "box.wipe", "box.echo"]
    results = [json.loads(m.content) for m in model.requests[1].messages if m.role == "tool"]
    assert results[1] == {"done": "box.wipe"} and len(results) == 3  # every call answered, in order


async def test_agent_run_rejection_goes_back_to_the_model(env) -> None:
    kernel, toolbox, runtime = env
    rt, model = runtime(call(("box__wipe", {})), say("Okay, I left it alone."))
    request = Request(actor=REQUESTER, guild_id="g1", channel_id="c1", kind="mention", text="wipe")
    paused = await rt.handle(request)
    reply = await rt.reject(paused.run_id, REQUESTER)
    assert reply.text == "Okay, I left it alone." and toolbox.ran == []
    [result] = [json.loads(m.content) for m in model.requests[1].messages if m.role == "tool"]
    assert "rejected" in result["error"]


def test_cli_exit_4_then_agent_confirm(tmp_path, monkeypatch) -> None:
    from gigi_core.cli import cli
    from gigi_core.cli.common import CliState
    from gigi_core.plugins import LoadOptions, load_plugins

    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    toolbox = Toolbox(tmp_path)

    def state() -> CliState:
        st = CliState()
        st._plugins = load_plugins(LoadOptions(load=frozenset()), extra=[("box", toolbox)])
        return st

    runner = CliRunner()
    assert (
        runner.invoke(cli, ["plugins", "enable", "box", "--guild", "g1"], obj=state()).exit_code
        == 0
    )
    result = runner.invoke(
        cli, ["tools", "call", "box.write", "--guild", "g1", "--user", "u1"], obj=state()
    )
    assert result.exit_code == 4, result.output
    run_id = result.stdout.strip().splitlines()[-1]
    assert run_id.startswith("run_") and toolbox.ran == []
    result = runner.invoke(cli, ["agent", "confirm", run_id, "--json"], obj=state())
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["citations"] == [
        {"tool": "box.write", "result": {"done": "box.write"}}
    ]
    assert toolbox.ran == ["box.write"]
    result = runner.invoke(cli, ["agent", "trace", run_id, "--json"], obj=state())
    assert json.loads(result.output)["status"] == "done"
    again = runner.invoke(cli, ["agent", "confirm", run_id], obj=state())
    assert again.exit_code == 3 and "already" in again.output


async def test_decide_by_confirmation_id(env) -> None:
    kernel, toolbox, _ = env
    reply = await kernel.agent.direct(direct_request(), "box.write", {})
    confirmation_id = reply.components[0].confirmation_id
    with pytest.raises(ConfirmationError, match="no confirmation"):
        await kernel.agent.decide("conf_nope", REQUESTER, approve=True)
    done = await kernel.agent.decide(confirmation_id, REQUESTER, approve=True)
    assert done.status == "done" and toolbox.ran == ["box.write"]


async def test_policy_decides_again_at_confirmation(env) -> None:
    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)
    await kernel.disable_plugin("g1", "box")
    reply = await kernel.agent.confirm(run_id, REQUESTER)
    assert toolbox.ran == []
    assert reply.citations[0].result == {
        "error": "no longer allowed: plugin box is not enabled in this server"
    }
    assert (await kernel.agent.trace(run_id))["confirmations"][0]["state"] == "failed"


async def test_expiry_ends_the_run_at_the_next_attempt(env) -> None:
    kernel, toolbox, _ = env
    rt = AgentRuntime(kernel, budgets=Budgets(confirmation_ttl_seconds=-1))
    reply = await rt.direct(direct_request(), "box.write", {})
    with pytest.raises(ConfirmationError, match="expired"):
        await rt.reject(reply.run_id, REQUESTER)
    run = await rt.runs.get(reply.run_id)
    assert (run.status, run.termination_reason) == ("done", "confirmation_expired")
    assert toolbox.ran == []


async def test_direct_confirmed_call_that_fails_ends_the_run(env, monkeypatch) -> None:
    from gigi_core.errors import ToolExecutionError

    kernel, toolbox, _ = env
    run_id = await pending_write(kernel)

    async def broken(ctx):
        raise RuntimeError("disk full")

    monkeypatch.setitem(kernel.registry.handlers, "box.write", broken)
    with pytest.raises(ToolExecutionError, match=r"box.write failed \(RuntimeError\)"):
        await kernel.agent.confirm(run_id, REQUESTER)
    run = await kernel.agent.runs.get(run_id)
    assert (run.status, run.termination_reason) == ("failed", "ToolExecutionError")
    assert (await kernel.agent.trace(run_id))["confirmations"][0]["state"] == "done"
