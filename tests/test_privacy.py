"""Per-user data: export, delete and guild purges across the kernel and plugins, both backends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.errors import GigiError, InvalidArguments
from gigi_core.llm.records import Owner
from gigi_core.llm.usage import UsageRecord
from gigi_core.store.agent_tables import AgentRun, AgentRunConfirmation
from gigi_core.store.channel_tables import ChannelObservation, SecureRange
from gigi_core.store.llm_tables import LlmCredential, LlmUsageEvent
from gigi_core.store.tables import AuditEvent, CapabilityGrant, GuildPlugin
from gigi_core.testing import open_test_kernel
from tests.llm.service_helpers import USER_KEY, leaks

USER = "u-CANARY-4242"  # distinctive, so a scan of every table finds any copy of it
OTHER = "u-other-7"
MEMBER = Actor(id=USER)
NEIGHBOUR = Actor(id=OTHER)
ADMIN = Actor(id="boss", is_admin=True)


def manifest_text(name: str, actions: str = "actions: []\n") -> str:
    return (
        "manifest_version: 1\n"
        "plugin:\n"
        f"  name: {name}\n"
        "  version: 0.0.1\n"
        f"  description: Test plugin {name}.\n"
        f"  data_statement: {name} keeps notes members write.\n"
        "  capabilities:\n"
        f"    - {{name: {name}.use, description: Use it, default: everyone}}\n" + actions
    )


NOTES_ACTIONS = """\
actions:
  - {name: notes.add, description: Add a note, safety: write, capability: notes.use,
     confirm: never, args: {type: object}}
  - {name: notes.wipe, description: Wipe notes, safety: destructive, capability: notes.use,
     confirm: always, args: {type: object}}
"""


class Notes:
    """A plugin keeping notes per (guild, user) in memory, answering every privacy hook."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "notes.yaml"
        self.path.write_text(manifest_text("notes", NOTES_ACTIONS))
        self.notes: dict[tuple[str, str], list[str]] = {}
        self.asked: list[tuple[str, str | None, str | None]] = []

    def add(self, guild: str, user: str, *texts: str) -> None:
        self.notes.setdefault((guild, user), []).extend(texts)

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        register("notes.add", lambda ctx: {"ok": True})
        register("notes.wipe", lambda ctx: {"ok": True})

    def _mine(self, user_id: str | None, guild_id: str | None) -> list[tuple[str, str]]:
        return [
            key
            for key in self.notes
            if (user_id is None or key[1] == user_id) and (guild_id is None or key[0] == guild_id)
        ]

    @hookimpl
    def export_user_data(self, user_id, guild_id, kernel):
        self.asked.append(("export", user_id, guild_id))
        return {"notes": [n for key in self._mine(user_id, guild_id) for n in self.notes[key]]}

    @hookimpl
    async def delete_user_data(self, user_id, guild_id, kernel):  # an async hook works too
        self.asked.append(("delete", user_id, guild_id))
        count = 0
        for key in self._mine(user_id, guild_id):
            count += len(self.notes.pop(key))
        return {"notes": count}

    @hookimpl
    def purge_guild_data(self, guild_id, kernel):
        self.asked.append(("purge", None, guild_id))
        count = 0
        for key in self._mine(None, guild_id):
            count += len(self.notes.pop(key))
        return {"notes": count}


class Boom:
    """Every privacy hook raises (with a message that must not reach the member)."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "boom.yaml"
        self.path.write_text(manifest_text("boom"))

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def export_user_data(self, user_id, guild_id, kernel):
        raise RuntimeError("secret detail of boom")

    @hookimpl
    def delete_user_data(self, user_id, guild_id, kernel):
        raise RuntimeError("secret detail of boom")

    @hookimpl
    def purge_guild_data(self, guild_id, kernel):
        raise RuntimeError("secret detail of boom")


class Odd:
    """Exports something that is not JSON."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "odd.yaml"
        self.path.write_text(manifest_text("odd"))

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def export_user_data(self, user_id, guild_id, kernel):
        return {"tags": {"a", "b"}}


@pytest.fixture
async def env(database_url, tmp_path):
    """notes enabled in g1 and g2; the openai provider so a personal key can be sealed."""
    notes = Notes(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=["openai"], extra_plugins=[("notes", notes)], database_url=database_url
    ) as kernel:
        for guild in ("g1", "g2"):
            await kernel.enable_plugin(guild, "notes", by="boss")
        yield kernel, notes


def req(actor: Actor, guild: str = "g1", channel: str = "c1") -> Request:
    return Request(actor=actor, guild_id=guild, channel_id=channel, kind="slash", text="")


def result_of(reply: Any) -> Any:
    assert reply.status == "done", reply
    [citation] = reply.citations
    return citation.result


async def usage(kernel: Any, actor: str, guild: str, n: int) -> None:
    await kernel.llm.usage_log.record(
        UsageRecord(
            request_id=f"r-{guild}-{n}-{len(actor)}",
            provider="openai",
            model="m1",
            purpose="chat",
            billing_owner_type="guild",
            billing_owner_id=guild,
            status="ok",
            actor_id=actor,
            guild_id=guild,
            input_tokens=n,
            output_tokens=1,
        )
    )


async def seed(kernel: Any, notes: Notes) -> None:
    """USER has data in g1 and g2; OTHER has some in g1."""
    await kernel.llm.add_credential(Owner.user(USER), "openai", "mine", USER_KEY, by=USER)
    await kernel.llm.set_profile(Owner.user(USER), "chat", "mine", "gpt-test")
    for guild in ("g1", "g2"):
        await kernel.add_grant(guild, "notes.use", "user", USER, by="boss")
        await usage(kernel, USER, guild, 10)
        result_of(await kernel.agent.direct(req(MEMBER, guild), "notes.add", {}))
    waiting = await kernel.agent.direct(req(MEMBER, "g1"), "notes.wipe", {})
    assert waiting.status == "awaiting_confirmation"
    await kernel.add_grant("g1", "notes.use", "user", OTHER, by=USER)  # USER granted it
    await kernel.set_channel_state("g1", "c5", "secure", by=USER)
    await usage(kernel, OTHER, "g1", 3)
    result_of(await kernel.agent.direct(req(NEIGHBOUR, "g1"), "notes.add", {}))
    notes.add("g1", USER, "first", "second")
    notes.add("g2", USER, "third")
    notes.add("g1", OTHER, "not yours")


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
        kernel.audit.queue(AuditRecord(kind="tool.call", status="ok", actor_id=USER, guild_id="g1"))
    await kernel.privacy.delete(USER, by="operator")
    assert await leaks(kernel, USER) == []
    kernel.audit.queue(AuditRecord(kind="tool.call", status="ok", actor_id=OTHER, guild_id="g2"))
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


# -- guild purge ---------------------------------------------------------------------------


async def test_purge_guild_removes_everything_but_billing_rows(env) -> None:
    kernel, notes = env
    await seed(kernel, notes)
    await kernel.set_channel_state("g1", "c6", "paused", by="boss")
    await kernel.set_channel_state("g2", "c6", "paused", by="boss")
    result = await kernel.privacy.purge_guild("g1")
    assert result["kernel"]["grants"] == 2 and result["kernel"]["agent_runs"] == 3
    assert result["kernel"]["plugin_settings"] == 1
    async with kernel.db.session() as s:

        async def rows(table: Any, guild: str) -> list[Any]:
            return list((await s.scalars(select(table).where(table.guild_id == guild))).all())

        for table in (GuildPlugin, CapabilityGrant, AgentRun, ChannelObservation, SecureRange):
            assert await rows(table, "g1") == [], table
        assert await rows(AuditEvent, "g1") == []
        billing = await rows(LlmUsageEvent, "g1")
        assert len(billing) == 2 and {u.actor_id for u in billing} == {None}
        assert sum(u.input_tokens for u in billing) == 13
        confirmations = (await s.scalars(select(AgentRunConfirmation))).all()
        assert confirmations == []  # the only one was in g1
        # g2 is untouched
        assert len(await rows(GuildPlugin, "g2")) == 1
        assert len(await rows(CapabilityGrant, "g2")) == 1
        assert len(await rows(AgentRun, "g2")) == 1
        assert len(await rows(ChannelObservation, "g2")) == 1
        assert {u.actor_id for u in await rows(LlmUsageEvent, "g2")} == {USER}
        assert (await s.scalars(select(LlmCredential))).all()  # a personal key is not a guild's
    assert "notes" not in await kernel.plugin_state.enabled_plugins("g1")
    assert "notes" in await kernel.plugin_state.enabled_plugins("g2")
    assert ("g1", USER) not in notes.notes and ("g2", USER) in notes.notes
    again = await kernel.privacy.purge_guild("g1")  # idempotent
    assert again["kernel"] == {} and again["plugins"] == {}


# -- the CLI ----------------------------------------------------------------------------------


@pytest.fixture
def gigi(database_url, tmp_path, monkeypatch):
    """The CLI on the same database a seeded kernel wrote (no plugins but the natives)."""
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "")
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(cli, list(args), obj=CliState(), input=stdin)

    async def seeded() -> None:
        async with open_test_kernel(tmp_path, plugins=[], database_url=database_url) as kernel:
            for guild in ("g1", "g2"):
                await kernel.add_grant(guild, "gigi.channel.manage", "user", USER)
                await usage(kernel, USER, guild, 5)
                result_of(await kernel.agent.direct(req(MEMBER, guild), "gigi.privacy.info", {}))

    asyncio.run(seeded())
    return invoke


def test_cli_export_json(gigi, tmp_path) -> None:
    result = gigi("privacy", "export", "--user", USER, "--guild", "g1")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["user_id"] == USER and data["guild_id"] == "g1"
    assert [g["guild_id"] for g in data["kernel"]["grants"]] == ["g1"]
    assert len(data["kernel"]["agent_runs"]) == 1 and data["plugins"] == {}
    out = tmp_path / "export.json"
    result = gigi("privacy", "export", "--user", USER, "--output", str(out))
    assert result.exit_code == 0 and f"Wrote the data of user {USER} to {out}." in result.output
    assert len(json.loads(out.read_text())["kernel"]["grants"]) == 2


def test_cli_delete_needs_yes_without_a_terminal(gigi) -> None:
    result = gigi("privacy", "delete", "--user", USER)
    assert result.exit_code == 2
    assert "refusing to delete without --yes (no terminal to ask)" in result.output
    data = json.loads(gigi("privacy", "export", "--user", USER).output)
    assert len(data["kernel"]["grants"]) == 2  # nothing happened


def test_cli_delete_with_yes(gigi) -> None:
    result = gigi("privacy", "delete", "--user", USER, "--guild", "g1", "--yes")
    assert result.exit_code == 0, result.output
    assert f"about user {USER} in guild g1:" in result.output
    assert "kernel: grants: 1" in result.output and "kernel: agent_runs: 1" in result.output
    result = gigi("privacy", "delete", "--user", USER, "--yes", "--json")
    counts = json.loads(result.output)
    assert counts["kernel"]["grants"] == 1 and counts["total"] >= 2
    result = gigi("privacy", "delete", "--user", USER, "--yes")
    assert result.exit_code == 0
    assert f"Nothing was held about user {USER} in every guild; nothing was deleted." in (
        result.output
    )
    data = json.loads(gigi("privacy", "export", "--user", USER).output)
    assert data["kernel"]["grants"] == [] and data["kernel"]["llm_usage"] == []


class _Hangs:
    """A plugin whose privacy hooks never answer."""

    @hookimpl
    async def export_user_data(self, user_id, guild_id, kernel):
        await asyncio.Event().wait()

    @hookimpl
    async def delete_user_data(self, user_id, guild_id, kernel):
        await asyncio.Event().wait()


async def test_a_hanging_privacy_hook_is_reported_by_its_deadline(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_PRIVACY_HOOK_TIMEOUT_SECONDS", "0.1")
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("hangs", _Hangs())]) as k:
        exported = await asyncio.wait_for(k.privacy.export("u1", "g1"), 10)
        deleted = await asyncio.wait_for(k.privacy.delete("u1", "g1"), 10)
    assert exported["errors"] == {"hangs": "no answer within 0.1 s"}
    assert deleted["errors"] == {"hangs": "no answer within 0.1 s"}


async def test_a_bad_purge_setting_never_reaches_the_publishing_surface(
    tmp_path, monkeypatch, caplog
) -> None:
    from gigi_core.events import GuildLeft

    monkeypatch.setenv("GIGI_GUILD_PURGE_AFTER_DAYS", "soon")
    async with open_test_kernel(tmp_path, plugins=[]) as k:
        await k.publish(GuildLeft(guild_id="g1"))  # logged, not raised
        assert await k.jobs.list() == []
    assert "GIGI_GUILD_PURGE_AFTER_DAYS" in caplog.text
