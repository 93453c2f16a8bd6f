"""The native privacy commands: export, delete with confirmation, info."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from gigi_core import Actor
from gigi_core.errors import GigiError, InvalidArguments
from gigi_core.store.agent_tables import AgentRun, AgentRunConfirmation
from gigi_core.store.tables import AuditEvent
from tests.privacy.plugins import (
    MEMBER,
    NEIGHBOUR,
    OTHER,
    USER,
    req,
    result_of,
    seed,
)

# -- the native commands ---------------------------------------------------------------------


async def test_export_command_refuses_another_user_and_exports_only_the_caller(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    for args in ({"user": OTHER}, {"user_id": OTHER}, {"guild_id": "g2"}):
        with pytest.raises(InvalidArguments, match="gigi.privacy.export"):
            await kernel.agent.direct(req(MEMBER), "gigi.privacy.export", args)
    result = result_of(await kernel.agent.direct(req(NEIGHBOUR), "gigi.privacy.export", {}))
    assert result["file"] == f"gigi-data-g1-{OTHER}.json"
    data = result["data"]
    assert data["user_id"] == OTHER and data["guild_id"] == "g1"
    assert data["plugins"]["notes"] == {"notes": ["not yours"]}
    assert USER not in json.dumps(data)


async def test_delete_command_asks_first_and_deletes_only_after_confirm(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    reply = await kernel.agent.direct(req(MEMBER), "gigi.privacy.delete", {})
    assert reply.status == "awaiting_confirmation" and reply.components
    assert notes.notes[("g1", USER)] == ["first", "second"]  # nothing happened yet
    assert len((await kernel.privacy.export(USER, "g1"))["kernel"]["grants"]) == 1
    with pytest.raises(GigiError):  # another member cannot approve it
        await kernel.agent.confirm(reply.run_id, NEIGHBOUR, guild_id="g1")
    done = await kernel.agent.confirm(reply.run_id, MEMBER, guild_id="g1")
    result = result_of(done)
    assert result["message"].startswith("Deleted ") and result["total"] > 0
    assert "personal LLM keys serve you in every server" in result["message"]
    assert result["plugins"] == {"notes": {"notes": 2}}
    assert notes.notes.get(("g1", USER)) is None and notes.notes[("g2", USER)] == ["third"]
    left = (await kernel.privacy.export(USER, "g1"))["kernel"]
    assert left["grants"] == [] and left["llm_usage"] == []
    # the run that did the deletion finished and is the only one left in g1 ...
    assert [(r["id"], r["status"]) for r in left["agent_runs"]] == [(reply.run_id, "done")]
    # ... until its queued job pseudonymises it: no row keeps the member's raw id
    await kernel.jobs.run_until_idle()
    assert (await kernel.privacy.export(USER, "g1"))["kernel"]["agent_runs"] == []
    alias = kernel.privacy.pseudonym(USER)
    async with kernel.db.session() as s:
        run = await s.get(AgentRun, reply.run_id)
        audit = (await s.execute(select(AuditEvent).where(AuditEvent.run_id == run.id))).scalars()
        confirm = (
            await s.execute(
                select(AgentRunConfirmation).where(AgentRunConfirmation.run_id == run.id)
            )
        ).scalar_one()
        assert run.actor_id == alias and run.status == "done"
        assert {a.actor_id for a in audit} == {alias}
        assert (confirm.requester_id, confirm.decided_by) == (alias, alias)
    # asking again finds nothing left but the new request's own run (forgotten in turn)
    second = await kernel.agent.direct(req(MEMBER), "gigi.privacy.delete", {})
    result = result_of(await kernel.agent.confirm(second.run_id, MEMBER, guild_id="g1"))
    assert result["total"] == 0 and result["plugins"] == {}


async def test_forgetting_the_deleting_run_waits_until_it_has_finished(env) -> None:
    from gigi_core.privacy.kernel_data import RunStillActive

    kernel, notes = env
    await seed(kernel, notes)
    reply = await kernel.agent.direct(req(MEMBER), "gigi.privacy.delete", {})
    with pytest.raises(RunStillActive):  # awaiting its confirmation: the job will retry
        await kernel.privacy.forget_run(reply.run_id)
    await kernel.agent.confirm(reply.run_id, MEMBER, guild_id="g1")
    assert await kernel.privacy.forget_run(reply.run_id) > 0
    assert await kernel.privacy.forget_run(reply.run_id) == 0  # idempotent
    assert await kernel.privacy.forget_run("run_never_existed") == 0


async def test_delete_command_rejected_deletes_nothing(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    reply = await kernel.agent.direct(req(MEMBER), "gigi.privacy.delete", {})
    rejected = await kernel.agent.reject(reply.run_id, MEMBER, guild_id="g1")
    assert "rejected" in rejected.text
    assert notes.notes[("g1", USER)] == ["first", "second"]
    assert len((await kernel.privacy.export(USER, "g1"))["kernel"]["grants"]) == 1


async def test_delete_for_a_member_with_no_data_says_nothing_was_deleted(env) -> None:
    kernel, _ = env
    newcomer = Actor(id="u-new-1")
    reply = await kernel.agent.direct(req(newcomer), "gigi.privacy.delete", {})
    result = result_of(await kernel.agent.confirm(reply.run_id, newcomer, guild_id="g1"))
    assert result["total"] == 0 and result["kernel"] == {} and result["plugins"] == {}
    assert "nothing was deleted" in result["message"]


async def test_privacy_info_lists_the_enabled_plugins_statements(env) -> None:
    kernel, _ = env
    result = result_of(await kernel.agent.direct(req(MEMBER), "gigi.privacy.info", {}))
    statements = {p["plugin"]: p["data_statement"] for p in result["plugins"]}
    assert statements["notes"] == "notes keeps notes members write."
    assert "gigi" in statements
    other = result_of(await kernel.agent.direct(req(MEMBER, "g9"), "gigi.privacy.info", {}))
    assert "notes" not in {p["plugin"] for p in other["plugins"]}


async def test_privacy_commands_are_offered_to_the_model_only_as_info(env) -> None:
    kernel, _ = env
    offered = {a.name for a in await kernel.policy.offerable(MEMBER, "g1")}
    assert "gigi.privacy.info" in offered
    assert not offered & {"gigi.privacy.export", "gigi.privacy.delete"}
