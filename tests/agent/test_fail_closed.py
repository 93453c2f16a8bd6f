"""Fail-closed behaviour found in review: stale identities, hidden channels, internal errors."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.errors import ConfigError, InvalidArguments
from gigi_core.store.tables import AuditEvent

REQUESTER = Actor(id="u1", roles=frozenset({"mods"}))


def request(actor: Actor = REQUESTER, **kwargs) -> Request:
    return Request(actor=actor, guild_id="g1", channel_id="c1", kind="slash", text="", **kwargs)


async def test_requester_who_lost_a_role_cannot_confirm_their_old_call(env) -> None:
    kernel, toolbox, _ = env
    await kernel.add_grant("g1", "box.admin", "role", "mods")
    # box.secret_op is read-only; make the policy confirm it through a veto-free path:
    reply = await kernel.agent.direct(request(), "box.write", {})
    assert reply.status == "awaiting_confirmation"
    await kernel.remove_grant("g1", "box.admin", "role", "mods")  # unrelated grant: still fine
    done = await kernel.agent.confirm(reply.run_id, Actor(id="u1"))  # no roles any more
    assert done.status == "done" and toolbox.ran == ["box.write"]  # box.use is everyone's


async def test_requester_who_lost_admin_cannot_confirm_an_admin_only_call(env, tmp_path) -> None:
    kernel, toolbox, _ = env
    admin = Actor(id="u9", is_admin=True)

    class ConfirmEverything:
        @hookimpl
        def check_tool_call(self, call, actor, action, kernel):
            return "confirm"

    kernel.pm.register(ConfirmEverything(), name="confirm-all")
    try:
        reply = await kernel.agent.direct(request(admin), "box.secret_op", {})
        assert reply.status == "awaiting_confirmation"
        done = await kernel.agent.confirm(reply.run_id, Actor(id="u9", is_admin=False))
    finally:
        kernel.pm.unregister(name="confirm-all")
    assert toolbox.ran == []
    assert "no longer allowed" in done.citations[0].result["error"]


async def test_confirmation_uses_the_surface_channel_check(env) -> None:
    kernel, toolbox, _ = env
    hidden = {"secret-channel"}

    async def visible(channel: str) -> bool:
        return channel not in hidden

    reply = await kernel.agent.direct(request(channel_visible=visible), "box.write", {})
    done = await kernel.agent.confirm(reply.run_id, REQUESTER, channel_visible=visible)
    assert done.status == "done"


async def test_an_internal_error_ends_the_run_politely(env, monkeypatch) -> None:
    kernel, _, runtime = env

    async def broken_config(*args, **kwargs):
        raise RuntimeError("kernel bug")

    monkeypatch.setattr(kernel, "plugin_config", broken_config)
    reply = await kernel.agent.direct(request(), "box.echo", {"text": "a"})
    rt = kernel.agent
    assert reply.status == "failed" and reply.termination_reason == "internal_error"
    assert "Something went wrong inside Gigi" in reply.text
    assert (await rt.runs.get(reply.run_id)).state_sealed is None  # nothing left to leak


async def test_direct_invalid_arguments_are_audited(env) -> None:
    kernel, _, _ = env
    with pytest.raises(InvalidArguments):
        await kernel.agent.direct(request(), "box.echo", {"text": 5})
    async with kernel.db.session() as s:
        rows = list(await s.scalars(select(AuditEvent).where(AuditEvent.kind == "agent.tool")))
    assert [(r.action, r.status) for r in rows] == [("box.echo", "invalid")]


async def test_finish_never_overwrites_a_cancellation(env) -> None:
    kernel, _, _ = env
    reply = await kernel.agent.direct(request(), "box.write", {})
    assert await kernel.agent.cancel(reply.run_id, REQUESTER)
    await kernel.agent.runs.finish(reply.run_id, "done", "completed")
    run = await kernel.agent.runs.get(reply.run_id)
    assert (run.status, run.termination_reason) == ("cancelled", "cancelled")


async def test_config_errors_never_quote_a_secret(env) -> None:
    kernel, _, _ = env
    with pytest.raises(ConfigError) as info:
        await kernel.configure_plugin("g1", "box", {"api_token": 12345})
    assert "12345" not in str(info.value) and "invalid value (not shown)" in str(info.value)


async def test_a_surface_cannot_decide_another_guilds_run(env) -> None:
    from gigi_core.agent.confirmations import ConfirmationError

    kernel, toolbox, _ = env
    reply = await kernel.agent.direct(request(), "box.write", {})
    boss = Actor(id="boss", is_admin=True)
    for attempt in (
        kernel.agent.confirm(reply.run_id, boss, guild_id="other"),
        kernel.agent.reject(reply.run_id, boss, guild_id="other"),
        kernel.agent.cancel(reply.run_id, boss, guild_id="other"),
    ):
        with pytest.raises(ConfirmationError, match="belongs to another server"):
            await attempt
    assert toolbox.ran == []
    done = await kernel.agent.confirm(reply.run_id, boss, guild_id="g1")
    assert done.status == "done" and toolbox.ran == ["box.write"]
