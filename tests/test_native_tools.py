"""The native tools (plugins.enabled, permissions.check, llm.usage.guild) on both backends."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.errors import InvalidArguments, PolicyDenied, ToolExecutionError
from gigi_core.store.tables import AuditEvent
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.llm.service_helpers import guild_usage
from tests.toolbox import Toolbox

USER = Actor(id="u1")
OTHER = Actor(id="u2-secret-person")
ADMIN = Actor(id="boss", is_admin=True)
NATIVE = ["gigi", "llm", "permissions", "plugins"]


@pytest.fixture
async def env(database_url, tmp_path):
    """dice and the toolbox enabled in g1; the native tools are on without being enabled."""
    toolbox = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=["dice"], extra_plugins=[("box", toolbox)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "dice")
        await kernel.enable_plugin("g1", "box")
        yield kernel


def req(actor: Actor = USER, guild: str = "g1", text: str = "") -> Request:
    return Request(actor=actor, guild_id=guild, channel_id="c1", kind="mention", text=text)


async def direct(kernel, action: str, args: dict, actor: Actor = USER, guild: str = "g1"):
    reply = await kernel.agent.direct(req(actor, guild), action, args)
    assert reply.status == "done", reply
    [citation] = reply.citations
    assert citation.tool == action
    return citation.result


async def agent_run(kernel, actor: Actor, *turns):
    model = ScriptedModel(list(turns))
    reply = await AgentRuntime(kernel, model=model).handle(req(actor, text="what can you do?"))
    return reply, model


# -- plugins.enabled ---------------------------------------------------------------------


async def test_plugins_enabled_lists_this_guild_with_actions(env) -> None:
    result = await direct(env, "plugins.enabled", {})
    assert result["guild_id"] == "g1"
    names = [p["name"] for p in result["plugins"]]
    assert names == sorted(["box", "dice", *NATIVE])
    dice = next(p for p in result["plugins"] if p["name"] == "dice")
    assert dice == {
        "name": "dice",
        "version": "0.1.0",
        "description": "Roll dice.",
        "native": False,
        "actions": [
            {
                "name": "dice.roll",
                "description": "Roll dice and return the faces and their total.",
                "safety": "read_only",
            }
        ],
    }
    assert all(p["native"] for p in result["plugins"] if p["name"] in NATIVE)
    # another guild: nothing enabled there but the native tools
    other = await direct(env, "plugins.enabled", {}, guild="g2")
    assert [p["name"] for p in other["plugins"]] == NATIVE
    await env.disable_plugin("g1", "dice")
    assert "dice" not in [p["name"] for p in (await direct(env, "plugins.enabled", {}))["plugins"]]


async def test_native_calls_are_audited_as_native(env) -> None:
    await direct(env, "plugins.enabled", {})
    await direct(env, "dice.roll", {"sides": 6})
    async with env.db.session() as s:
        kinds = dict(
            (
                await s.execute(
                    select(AuditEvent.action, AuditEvent.tool_kind).where(
                        AuditEvent.kind == "agent.tool", AuditEvent.status == "ok"
                    )
                )
            ).all()
        )
    assert kinds == {"plugins.enabled": "native", "dice.roll": "plugin"}


async def test_plugins_enabled_through_the_model(env) -> None:
    reply, model = await agent_run(
        env, USER, call(("plugins__enabled", {})), say("Here is what I can do.")
    )
    assert reply.status == "done" and reply.text == "Here is what I can do."
    assert [c.tool for c in reply.citations] == ["plugins.enabled"]
    offered = set(model.offered(0))
    assert {"plugins__enabled", "permissions__check", "dice__roll"} <= offered
    assert "llm__usage__guild" not in offered  # admins only
    tool_result = next(m for m in model.requests[1].messages if m.role == "tool")
    assert "dice.roll" in json.loads(tool_result.content)["plugins"][1]["actions"][0]["name"]


async def test_admin_can_disable_a_native_plugin(env) -> None:
    assert await env.disable_plugin("g1", "permissions", by="boss")
    with pytest.raises(PolicyDenied, match="plugin permissions is not enabled in this server"):
        await env.agent.direct(req(), "permissions.check", {"action": "dice.roll"})
    assert "permissions" not in await env.plugin_state.enabled_plugins("g1")
    assert "permissions" in await env.plugin_state.enabled_plugins("g2")  # per guild
    await env.enable_plugin("g1", "permissions")
    assert (await direct(env, "permissions.check", {"action": "dice.roll"}))["allowed"]


async def test_configuring_a_native_plugin_does_not_disable_it(env) -> None:
    await env.configure_plugin("g2", "plugins", {})
    assert "plugins" in await env.plugin_state.enabled_plugins("g2")


# -- permissions.check -------------------------------------------------------------------


async def test_permissions_check_allowed(env) -> None:
    result = await direct(env, "permissions.check", {"action": "box.echo"})
    assert result["decision"] == "allow" and result["allowed"] and result["known"]
    assert result["reason"] == "allowed (granted to everyone by default)"


async def test_permissions_check_denied_then_granted(env) -> None:
    await env.add_grant("g1", "box.admin", "user", OTHER.id)
    result = await direct(env, "permissions.check", {"action": "box.secret_op"})
    assert result["decision"] == "deny" and not result["allowed"]
    assert "you do not hold box.admin" in result["reason"]
    assert OTHER.id not in json.dumps(result)  # nothing about who else holds it
    assert (await direct(env, "permissions.check", {"action": "box.secret_op"}, OTHER))["allowed"]
    await env.add_grant("g1", "box.admin", "user", USER.id)
    result = await direct(env, "permissions.check", {"action": "box.secret_op"})
    assert result["decision"] == "allow" and result["reason"] == "allowed (explicit grant)"


async def test_permissions_check_needs_confirmation(env) -> None:
    result = await direct(env, "permissions.check", {"action": "box.write"})
    assert result["decision"] == "confirm" and result["allowed"]
    assert "needs your confirmation" in result["reason"]
    assert (await direct(env, "permissions.check", {"action": "box.wipe"}))["decision"] == "confirm"


async def test_permissions_check_disabled_unknown_and_external(env) -> None:
    await env.disable_plugin("g1", "dice")
    result = await direct(env, "permissions.check", {"action": "dice.roll"})
    assert result["decision"] == "deny" and "not enabled in this server" in result["reason"]
    result = await direct(env, "permissions.check", {"action": "nope.nothing"})
    assert result == {
        "action": "nope.nothing",
        "known": False,
        "decision": "deny",
        "allowed": False,
        "reason": "no installed plugin declares an action named 'nope.nothing'",
    }
    result = await direct(env, "permissions.check", {"action": "box.fetch"}, ADMIN)
    assert result["decision"] == "deny" and "external" in result["reason"]


async def test_permissions_check_answers_only_for_the_asker(env) -> None:
    """The actor comes from the request; an argument naming someone else is refused."""
    with pytest.raises(InvalidArguments):
        await env.agent.direct(
            req(), "permissions.check", {"action": "box.secret_op", "user": ADMIN.id}
        )
    # an admin asking gets the admin answer; a user asking about the same action does not
    admin = await direct(env, "permissions.check", {"action": "llm.usage.guild"}, ADMIN)
    user = await direct(env, "permissions.check", {"action": "llm.usage.guild"}, USER)
    assert admin["allowed"] and admin["reason"] == "allowed (guild admin)"
    assert not user["allowed"] and "llm.usage.read" in user["reason"]


async def test_permissions_check_through_the_model(env) -> None:
    reply, model = await agent_run(
        env,
        USER,
        call(("permissions__check", {"action": "box.secret_op"})),
        say("You may not."),
    )
    [citation] = reply.citations
    assert citation.tool == "permissions.check" and citation.result["decision"] == "deny"
    assert reply.text == "You may not."


# -- llm.usage.guild ---------------------------------------------------------------------


async def record_usage(kernel, guild: str, tokens: int) -> None:
    await kernel.llm.usage_log.record(guild_usage(guild, tokens, provider="fakeai"))


async def test_llm_usage_guild_for_admins(env) -> None:
    await record_usage(env, "g1", 10)
    await record_usage(env, "g1", 5)
    await record_usage(env, "g2", 1000)
    result = await direct(env, "llm.usage.guild", {}, ADMIN)
    assert result["guild_id"] == "g1" and result["since"] is None
    [row] = result["rows"]
    assert row["calls"] == 2 and row["input_tokens"] == 15 and row["model"] == "m1"
    assert result["totals"]["calls"] == 2 and result["totals"]["input_tokens"] == 15
    recent = await direct(env, "llm.usage.guild", {"since": "7d"}, ADMIN)
    assert recent["totals"]["calls"] == 2 and recent["since"]
    future = await direct(env, "llm.usage.guild", {"since": "2999-01-01"}, ADMIN)
    assert future["rows"] == [] and future["totals"]["calls"] == 0
    with pytest.raises(ToolExecutionError, match="cannot read since='yesterday-ish'"):
        await env.agent.direct(req(ADMIN), "llm.usage.guild", {"since": "yesterday-ish"})


async def test_llm_usage_guild_denied_for_non_admins(env) -> None:
    await record_usage(env, "g1", 10)
    with pytest.raises(PolicyDenied, match="you do not hold llm.usage.read"):
        await env.agent.direct(req(USER), "llm.usage.guild", {})
    # through the model: not offered, and a guessed call is refused without running
    reply, model = await agent_run(env, USER, call(("llm__usage__guild", {})), say("No."))
    assert "llm__usage__guild" not in model.offered(0)
    assert reply.citations == [] and reply.text == "No."
    # an explicit grant opens it
    await env.add_grant("g1", "llm.usage.read", "user", USER.id)
    assert (await direct(env, "llm.usage.guild", {}, USER))["totals"]["calls"] == 1


async def test_llm_usage_guild_through_the_model_for_an_admin(env) -> None:
    await record_usage(env, "g1", 7)
    reply, model = await agent_run(
        env, ADMIN, call(("llm__usage__guild", {"since": "24h"})), say("7 tokens in.")
    )
    assert "llm__usage__guild" in model.offered(0)
    [citation] = reply.citations
    assert citation.result["totals"]["input_tokens"] == 7
