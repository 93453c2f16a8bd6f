"""Per-user data through the privacy hooks and the kernel's own tables, both backends."""

from __future__ import annotations

import json

from sqlalchemy import select

from gigi_core.store.agent_tables import AgentRun
from gigi_core.store.channel_tables import ChannelObservation, SecureRange
from gigi_core.store.llm_tables import LlmUsageEvent
from gigi_core.store.tables import AuditEvent, CapabilityGrant
from gigi_core.testing import open_test_kernel
from tests.llm.service_helpers import USER_KEY, leaks
from tests.privacy.plugins import (
    OTHER,
    USER,
    Boom,
    Notes,
    Odd,
    seed,
)

# -- the hooks ------------------------------------------------------------------------------


async def test_hook_export_user_data(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    data = await kernel.privacy.export(USER, "g1")
    assert data["user_id"] == USER and data["guild_id"] == "g1"
    assert data["plugins"]["notes"] == {"notes": ["first", "second"]}
    assert ("export", USER, "g1") in notes.asked
    everywhere = await kernel.privacy.export(USER)
    assert everywhere["plugins"]["notes"] == {"notes": ["first", "second", "third"]}
    assert "not yours" not in json.dumps(everywhere)
    assert "errors" not in everywhere


async def test_hook_delete_user_data(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    counts = await kernel.privacy.delete(USER, "g1")
    assert counts["plugins"] == {"notes": {"notes": 2}}
    assert ("delete", USER, "g1") in notes.asked
    assert counts["total"] == sum(counts["kernel"].values()) + 2
    assert notes.notes == {("g2", USER): ["third"], ("g1", OTHER): ["not yours"]}
    assert (await kernel.privacy.export(USER, "g1"))["plugins"]["notes"] == {"notes": []}


async def test_hook_purge_guild_data(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    result = await kernel.privacy.purge_guild("g1")
    assert result["plugins"] == {"notes": {"notes": 3}}
    assert ("purge", None, "g1") in notes.asked
    assert notes.notes == {("g2", USER): ["third"]}


# -- the kernel's own tables --------------------------------------------------------------


async def test_kernel_export_holds_metadata_never_keys(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    data = await kernel.privacy.export(USER, "g1")
    mine = data["kernel"]
    [cred] = mine["llm_credentials"]
    assert cred["provider"] == "openai" and cred["label"] == "mine" and cred["fingerprint"]
    assert [g["capability"] for g in mine["grants"]] == ["notes.use"]
    assert {g["guild_id"] for g in mine["grants"]} == {"g1"}
    assert {r["guild_id"] for r in mine["agent_runs"]} == {"g1"} and len(mine["agent_runs"]) == 2
    [confirmation] = mine["confirmations"]
    assert confirmation["action"] == "notes.wipe" and confirmation["state"] == "pending"
    assert [(u["guild_id"], u["input_tokens"]) for u in mine["llm_usage"]] == [("g1", 10)]
    text = json.dumps(data)
    assert USER_KEY not in text and USER_KEY[-8:] not in text
    assert OTHER not in text  # the grant USER gave OTHER is not OTHER's data in USER's file
    everywhere = (await kernel.privacy.export(USER))["kernel"]
    assert {g["guild_id"] for g in everywhere["grants"]} == {"g1", "g2"}
    assert len(everywhere["agent_runs"]) == 3 and len(everywhere["llm_usage"]) == 2


async def test_kernel_delete_removes_counts_and_pseudonymises(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    counts = await kernel.privacy.delete(USER, by="operator")
    k = counts["kernel"]
    assert k["llm_credentials"] == 1 and k["llm_profiles"] == 1
    assert k["grants"] == 2 and k["agent_runs"] == 3 and k["confirmations"] == 1
    assert k["llm_usage_pseudonymised"] == 2 and k["audit_pseudonymised"] >= 3
    assert k["attributions_pseudonymised"] >= 2  # the grant USER gave, the secured channel
    assert counts["total"] == sum(k.values()) + 3
    # the member's id is nowhere in the database any more, nor their key
    assert await leaks(kernel, USER, USER_KEY) == []
    pseudonym = kernel.privacy.pseudonym(USER)
    assert pseudonym.startswith("anon:") and USER not in pseudonym
    assert pseudonym == kernel.privacy.pseudonym(USER) != kernel.privacy.pseudonym(OTHER)
    async with kernel.db.session() as s:
        actors = sorted((await s.scalars(select(LlmUsageEvent.actor_id))).all())
        audit_actors = set((await s.scalars(select(AuditEvent.actor_id))).all())
        granted_by = (
            await s.scalars(
                select(CapabilityGrant.granted_by).where(CapabilityGrant.subject_id == OTHER)
            )
        ).one()
        secured = await s.get(ChannelObservation, ("g1", "c5"))
        [secure_range] = (await s.scalars(select(SecureRange))).all()
    assert actors == sorted([pseudonym, pseudonym, OTHER])  # billing rows are kept
    assert pseudonym in audit_actors and OTHER in audit_actors
    assert granted_by == pseudonym and secured.updated_by == pseudonym
    assert secure_range.started_by == pseudonym
    # the other member keeps everything
    other = (await kernel.privacy.export(OTHER))["kernel"]
    assert len(other["grants"]) == 1 and len(other["agent_runs"]) == 1
    assert notes.notes == {("g1", OTHER): ["not yours"]}


async def test_audit_rows_still_queued_are_erased_too(env) -> None:
    """A read-only call's audit row is queued behind the reply; an erasure or a guild purge
    right after it must not be overtaken by it (the writer is drained first)."""
    from gigi_core.store.audit import AuditRecord

    kernel, _ = env
    for _ in range(3):
        await kernel.audit.queue(
            AuditRecord(kind="tool.call", status="ok", actor_id=USER, guild_id="g1")
        )
    await kernel.privacy.delete(USER, by="operator")
    assert await leaks(kernel, USER) == []
    await kernel.audit.queue(
        AuditRecord(kind="tool.call", status="ok", actor_id=OTHER, guild_id="g2")
    )
    await kernel.privacy.purge_guild("g2")
    await kernel.db.writer.drain()
    async with kernel.db.session() as s:
        guilds = set((await s.scalars(select(AuditEvent.guild_id))).all())
    assert "g2" not in guilds


async def test_delete_is_idempotent_and_nothing_is_reported_as_nothing(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    assert (await kernel.privacy.delete(USER))["total"] > 0
    again = await kernel.privacy.delete(USER)
    assert again["total"] == 0 and again["kernel"] == {}
    assert all(not c for c in again["plugins"].values()) and "errors" not in again
    nobody = await kernel.privacy.delete("u-never-seen", "g1")
    assert nobody["total"] == 0 and nobody["kernel"] == {}


async def test_the_same_pseudonym_across_deletes(env) -> None:
    """Two guild-scoped deletes of one member leave one pseudonym, so billing still adds up."""
    kernel, notes = env
    await seed(kernel, notes)
    await kernel.privacy.delete(USER, "g1")
    await kernel.privacy.delete(USER, "g2")
    async with kernel.db.session() as s:
        actors = set(
            (
                await s.scalars(
                    select(LlmUsageEvent.actor_id).where(LlmUsageEvent.actor_id != OTHER)
                )
            ).all()
        )
    assert actors == {kernel.privacy.pseudonym(USER)}


async def test_guild_scoped_delete_leaves_other_guilds(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    counts = await kernel.privacy.delete(USER, "g1")
    assert counts["kernel"]["grants"] == 1 and counts["kernel"]["agent_runs"] == 2
    # the personal key serves the member in g2 too: kept, and said so
    assert "llm_credentials" not in counts["kernel"]
    assert counts["kept"] == {"personal_llm_keys": 1}
    left = (await kernel.privacy.export(USER))["kernel"]
    assert [c["label"] for c in left["llm_credentials"]] == ["mine"]
    assert [(g["guild_id"], g["capability"]) for g in left["grants"]] == [("g2", "notes.use")]
    assert {r["guild_id"] for r in left["agent_runs"]} == {"g2"}
    assert [u["guild_id"] for u in left["llm_usage"]] == ["g2"]  # g2 rows keep the raw id
    async with kernel.db.session() as s:
        g2_grants = (
            await s.scalars(select(CapabilityGrant).where(CapabilityGrant.guild_id == "g2"))
        ).all()
        g1_runs = (
            await s.scalars(
                select(AgentRun).where(AgentRun.guild_id == "g1", AgentRun.actor_id == USER)
            )
        ).all()
    assert [g.subject_id for g in g2_grants] == [USER] and g1_runs == []
    assert notes.notes[("g2", USER)] == ["third"]


async def test_a_raising_plugin_is_reported_by_name_and_the_others_still_run(
    database_url, tmp_path, caplog
) -> None:
    notes = Notes(tmp_path)
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("boom", Boom(tmp_path)), ("notes", notes), ("odd", Odd(tmp_path))],
        database_url=database_url,
    ) as kernel:
        notes.add("g1", USER, "kept safe")
        data = await kernel.privacy.export(USER, "g1")
        assert data["plugins"] == {"notes": {"notes": ["kept safe"]}}
        assert set(data["errors"]) == {"boom", "odd"}
        assert data["errors"]["boom"].startswith("RuntimeError")
        assert "not JSON" in data["errors"]["odd"]
        json.dumps(data)  # the file is still JSON
        counts = await kernel.privacy.delete(USER, "g1")
        assert counts["plugins"] == {"notes": {"notes": 1}}
        assert set(counts["errors"]) == {"boom"} and counts["total"] == 1
        purged = await kernel.privacy.purge_guild("g1")
        assert set(purged["errors"]) == {"boom"} and ("purge", None, "g1") in notes.asked
        text = json.dumps([data, counts, purged]) + caplog.text
        assert "secret detail of boom" not in text
        assert "plugin boom: delete_user_data raised RuntimeError" in caplog.text
