"""The plugin loads from its entry point, creates its tables in its own alembic branch, and
its admin commands set the policy: retention before ingest, admins only, purge confirmed."""

from __future__ import annotations

import pytest
from memory_helpers import (
    ADMIN,
    MEMBER,
    call,
    count,
    dump_text,
    embed_all,
    enable,
    message,
    publish,
    rows,
    segments_of,
)

from gigi_core import Actor, ConfirmationRequired, PolicyDenied, ToolExecutionError
from gigi_core.surfaces import Request
from gigi_core.testing import load_test_plugins

ADMIN_ACTIONS = ("enable", "disable", "status", "purge", "policy", "sync")


def test_the_entry_point_loads_every_action_with_a_command() -> None:
    loaded = load_test_plugins(["memory"])
    record = loaded.registry.records["memory"]
    assert record.status == "ok", record.error
    assert record.distribution == "gigi-memory"
    actions = {n: a for n, a in loaded.registry.actions.items() if n.startswith("memory.")}
    assert set(actions) == {f"memory.{v}" for v in ("count", "search", "recent", *ADMIN_ACTIONS)}
    for name, action in actions.items():
        assert action.command == name.replace(".", " ")
        wanted = (
            "memory.manage.guild" if name.split(".")[1] in ADMIN_ACTIONS else "memory.read.guild"
        )
        assert action.capability == wanted
        if wanted == "memory.manage.guild":
            assert action.offer_to_model is False
    assert actions["memory.purge"].needs_confirmation
    assert "memory.retention" in loaded.registry.jobs
    assert loaded.registry.jobs["memory.retention"].schedule
    assert "memory" in loaded.registry.retrievers


async def test_tables_come_from_the_memory_branch(kernel) -> None:
    names = {
        "memory_guild_policies",
        "memory_channels",
        "memory_messages",
        "memory_mentions",
        "memory_segments",
        "memory_backfills",
        "memory_erasures",
        "memory_tombstones",
    }
    if kernel.db.dialect == "sqlite":
        found = await rows(kernel, "SELECT name FROM sqlite_master WHERE name LIKE 'memory%'")
        assert names | {"memory_fts"} <= {r[0] for r in found}
    else:
        found = await rows(kernel, "SELECT tablename FROM pg_tables WHERE tablename LIKE 'memory%'")
        assert names <= {r[0] for r in found}
    versions = await rows(kernel, "SELECT version_num FROM alembic_version")
    assert "memory_0006" in {r[0] for r in versions}  # the branch's head


async def test_nothing_is_remembered_before_an_admin_enables_a_channel(kernel) -> None:
    await publish(kernel, message("before anything"))
    assert await count(kernel, author="u1") == 0
    assert await rows(kernel, "SELECT id FROM memory_messages") == []
    status = await call(kernel, "status")
    assert status["channels"] == [] and status["policy"]["retention_days"] is None


async def test_enabling_needs_a_retention(kernel) -> None:
    with pytest.raises(ToolExecutionError, match="set a retention first"):
        await enable(kernel, days=None)
    await call(kernel, "policy", retention_days=14)
    result = await enable(kernel, days=None)
    assert result["retention_days"] == 14 and result["retention_source"] == "server default"
    await publish(kernel, message("kept for a fortnight"))
    (row,) = await rows(kernel, "SELECT created_ms, retention_until_ms FROM memory_messages")
    assert row.retention_until_ms - row.created_ms == 14 * 86_400_000
    # The channel's own retention wins and rewrites what is stored.
    await enable(kernel, days=3)
    (row,) = await rows(kernel, "SELECT created_ms, retention_until_ms FROM memory_messages")
    assert row.retention_until_ms - row.created_ms == 3 * 86_400_000


@pytest.mark.parametrize("action", ADMIN_ACTIONS)
async def test_admin_commands_refuse_members(kernel, action) -> None:
    args = {
        "enable": {"channel": "c1", "retention_days": 5},
        "disable": {"channel": "c1"},
        "purge": {"channel": "c1"},
    }.get(action, {})
    with pytest.raises(PolicyDenied, match=r"memory\.manage\.guild"):
        await call(kernel, action, actor=MEMBER, **args)
    assert await rows(kernel, "SELECT * FROM memory_channels") == []


async def test_reading_needs_memory_read_guild(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("secret plans"))
    with pytest.raises(PolicyDenied, match=r"memory\.read\.guild"):
        await count(kernel, actor=MEMBER, text="plans")
    await kernel.add_grant("g1", "memory.read.guild", "user", "member")
    assert await count(kernel, actor=MEMBER, text="plans") == 1
    # Reading does not let a member administer memory.
    with pytest.raises(PolicyDenied):
        await call(kernel, "disable", actor=MEMBER, channel="c1")


async def test_disable_stops_ingest_and_keeps_what_is_stored(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("first"))
    result = await call(kernel, "disable", channel="c1")
    assert result["mode"] == "off" and result["was"] == "on"
    await publish(kernel, message("second"))
    assert await count(kernel, author="u1") == 1
    assert (await call(kernel, "status"))["channels"][0]["mode"] == "off"


async def test_memory_off_for_the_server(kernel) -> None:
    await enable(kernel)
    await call(kernel, "policy", enabled=False)
    await publish(kernel, message("not now"))
    with pytest.raises(ToolExecutionError, match="memory is turned off"):
        await count(kernel, author="u1")
    await call(kernel, "policy", enabled=True)
    assert await count(kernel, author="u1") == 0
    assert (await call(kernel, "policy"))["policy"] == {
        "enabled": True,
        "retention_days": None,
        "storage": "encrypted",
        "allow_bots": False,
        "embeddings": "local",
        "redaction": {"emails": True, "phones": True, "patterns": []},
    }


async def test_a_stricter_storage_mode_rewrites_what_is_stored(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("zebracanary is here"))
    await embed_all(kernel)
    (row,) = await rows(kernel, "SELECT search_text, sealed_text FROM memory_messages")
    assert row.sealed_text is not None and "zebracanary" not in bytes(row.sealed_text).decode(
        "latin-1"
    )
    assert (await call(kernel, "recent"))["messages"][0]["snippet"] == "zebracanary is here"

    result = await call(kernel, "policy", storage="index_only")
    assert result["rewritten"] == 1
    (row,) = await rows(kernel, "SELECT search_text, sealed_text FROM memory_messages")
    assert row.sealed_text is None and row.search_text == "zebracanary is here"
    assert await count(kernel, text="zebracanary") == 1

    assert len(await segments_of(kernel)) == 1  # index_only keeps the vectors
    await call(kernel, "policy", storage="metadata_only")
    assert "zebracanary" not in await dump_text(kernel)
    assert await segments_of(kernel) == []  # no text, no vectors
    assert await count(kernel, author="u1") == 1  # counts by author still work
    with pytest.raises(ToolExecutionError, match="metadata only"):
        await count(kernel, text="zebracanary")
    with pytest.raises(ToolExecutionError, match="metadata only"):
        await call(kernel, "search", query="zebracanary")
    # A looser mode applies to new messages only.
    await call(kernel, "policy", storage="encrypted")
    await publish(kernel, message("zebracanary again"))
    assert await count(kernel, text="zebracanary") == 1


async def test_purge_is_destructive_and_needs_confirmation(kernel) -> None:
    await enable(kernel)
    await enable(kernel, channel="c2")
    await publish(kernel, message("one"), message("two"), message("other", channel_id="c2"))
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 3
    with pytest.raises(ConfirmationRequired):
        await call(kernel, "purge", channel="c1")
    request = Request(actor=ADMIN, guild_id="g1", channel_id="c1", kind="slash", text="")
    reply = await kernel.agent.direct(request, "memory.purge", {"channel": "c1"})
    assert reply.components and await count(kernel, author="u1") == 2  # nothing yet
    done = await kernel.agent.confirm(reply.run_id, ADMIN)
    assert done.citations[0].result == {"purged": "channel", "channel_id": "c1", "messages": 2}
    assert await count(kernel, author="u1") == 0
    assert await count(kernel, author="u1", channel="c2") == 1
    assert [r.channel_id for r in await segments_of(kernel)] == ["c2"]
    # Purging everything keeps the settings: the channels are still remembered afterwards.
    reply = await kernel.agent.direct(request, "memory.purge", {"everything": True})
    done = await kernel.agent.confirm(reply.run_id, ADMIN)
    assert done.citations[0].result["messages"] == 1
    assert await segments_of(kernel) == []
    await publish(kernel, message("after the purge"))
    assert await count(kernel, author="u1") == 1


async def test_purge_needs_exactly_one_target_before_any_confirmation(kernel) -> None:
    request = Request(actor=ADMIN, guild_id="g1", channel_id="c1", kind="slash", text="")
    for args in ({}, {"channel": "c1", "everything": True}):
        with pytest.raises(PolicyDenied, match="name one channel"):
            await call(kernel, "purge", **args)
        with pytest.raises(PolicyDenied, match="name one channel"):
            await kernel.agent.direct(request, "memory.purge", args)


async def test_every_surface_gets_the_memory_commands(kernel) -> None:
    specs = {s.text: s for s in kernel.commands.for_plugin("memory")}
    assert set(specs) == {f"memory {a}" for a in ("count", "search", "recent", *ADMIN_ACTIONS)}
    enable_spec, rest = kernel.commands.find(["memory", "enable"])
    assert enable_spec.action == "memory.enable" and rest == []
    assert [o.name for o in enable_spec.options] == ["channel", "retention_days"]
    assert all(specs[f"memory {a}"].admin_default for a in ADMIN_ACTIONS)
    assert all(specs[f"memory {a}"].ephemeral for a in ADMIN_ACTIONS)


async def test_a_member_cannot_enable_a_channel_even_with_read(kernel) -> None:
    await kernel.add_grant("g1", "memory.read.guild", "user", "member")
    with pytest.raises(PolicyDenied):
        await call(kernel, "enable", actor=Actor(id="member"), channel="c1", retention_days=3)


async def test_channel_retention_tells_other_plugins_what_memory_keeps(kernel) -> None:
    """``kernel.channel_retention``: memory's answer is the channel's retention while its
    mode is on, and None before, after disabling, and for a channel never enabled."""
    assert await kernel.channel_retention("g1", "c1") is None
    await enable(kernel, days=12)
    assert await kernel.channel_retention("g1", "c1") == 12
    assert await kernel.channel_retention("g1", "c2") is None
    await call(kernel, "disable", channel="c1")
    assert await kernel.channel_retention("g1", "c1") is None
    await enable(kernel, days=5)
    assert await kernel.channel_retention("g1", "c1") == 5
    await kernel.disable_plugin("g1", "memory")  # the plugin off in the guild keeps nothing
    assert await kernel.channel_retention("g1", "c1") is None
