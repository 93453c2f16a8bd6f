"""Guild purges, the `gigi privacy` CLI, and privacy hooks that hang or are misconfigured."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlalchemy import select

from gigi_core import hookimpl
from gigi_core.store.agent_tables import AgentRun, AgentRunConfirmation
from gigi_core.store.channel_tables import ChannelObservation, SecureRange
from gigi_core.store.llm_tables import LlmCredential, LlmUsageEvent
from gigi_core.store.tables import AuditEvent, CapabilityGrant, GuildPlugin
from gigi_core.testing import open_test_kernel
from tests.privacy.plugins import (
    USER,
    seed,
)

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
