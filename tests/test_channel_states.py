"""Channel observation states (active | paused | secure) from the console, the CLI and the API."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.errors import ConfigError, PolicyDenied
from gigi_core.events import ChannelSecured, MessageCreated
from gigi_core.store.tables import AuditEvent
from gigi_core.testing import open_test_kernel
from tests.llm.service_helpers import leaks

ALICE = Actor(id="alice", is_admin=True)
BOB = Actor(id="bob")
CANARY = "CANARY-channel-text-5d1e"


class Watcher:
    """A plugin with no actions that records every event it is given."""

    def __init__(self, tmp_path: Any) -> None:
        self.path = tmp_path / "watcher.yaml"
        self.path.write_text(
            "manifest_version: 1\n"
            "plugin:\n"
            "  name: watcher\n"
            "  version: 0.0.1\n"
            "  description: Watches.\n"
            "  data_statement: Stores nothing.\n"
            "actions: []\n"
        )
        self.seen: list[Any] = []

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def observe_event(self, event, kernel):
        self.seen.append(event)


@pytest.fixture
async def env(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    watcher = Watcher(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("watcher", watcher)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("console", "watcher")
        await kernel.enable_plugin("g1", "watcher")
        yield kernel, watcher


async def drive(kernel: Any, lines: list[str], actor: Actor | None = None) -> str:
    out = io.StringIO()
    stdin = io.StringIO("".join(line + "\n" for line in lines))
    await asyncio.wait_for(ConsoleSurface(kernel, stdin=stdin, stdout=out, actor=actor).run(), 30)
    return out.getvalue()


def message(channel: str, text: str = "hello", guild: str = "g1", **extra: Any) -> MessageCreated:
    return MessageCreated(
        guild_id=guild,
        message_id=f"m-{channel}-{text}",
        channel_id=channel,
        author_id="u9",
        created_at=datetime.now(UTC),
        text=text,
        **extra,
    )


def req(actor: Actor, channel: str = "c1", guild: str = "g1") -> Request:
    return Request(actor=actor, guild_id=guild, channel_id=channel, kind="slash", text="")


def result_of(reply: Any) -> dict[str, Any]:
    assert reply.status == "done", reply
    [citation] = reply.citations
    return citation.result


# -- the console --------------------------------------------------------------------------


async def test_console_pause_defaults_to_this_channel_and_says_what_it_means(env) -> None:
    kernel, _ = env
    output = await drive(kernel, ["/gigi channel pause"])
    assert await kernel.channels.get("console", "console") == "paused"
    assert "Paused: no plugin sees messages in <#console> from now on." in output, output
    assert "@mentions and commands still work there" in output
    assert "Nothing already stored is deleted" in output and "/gigi channel resume" in output
    output = await drive(kernel, ["/gigi channel pause", "/gigi channel status"])
    assert "(No change: it was already paused.)" in output
    assert "<#console> is paused." in output
    output = await drive(kernel, ["/gigi channel resume"])
    assert await kernel.channels.get("console", "console") == "active"
    assert "Gigi's plugins see new messages in <#console> again" in output


async def test_console_secure_names_a_channel_and_records_a_range(env) -> None:
    kernel, watcher = env
    output = await drive(kernel, ["/gigi channel secure channel=<#c9>"])
    assert await kernel.channels.get("console", "c9") == "secure"
    assert await kernel.channels.get("console", "console") == "active"
    assert "Secured: no plugin sees messages in <#c9>" in output, output
    assert "plugins were told to drop what they hold in memory for it" in output
    assert "The secure period is recorded" in output
    [secure_range] = await kernel.channels.secure_ranges("console", "c9")
    assert secure_range.ended_at is None and secure_range.started_by == "alice"
    await kernel.events.drain()
    assert [
        (type(e), e.channel_id, e.by) for e in watcher.seen if isinstance(e, ChannelSecured)
    ] == [(ChannelSecured, "c9", "alice")]


async def test_console_non_admin_cannot_pause(env) -> None:
    kernel, _ = env
    output = await drive(kernel, ["/gigi channel pause", "/gigi channel secure"], actor=BOB)
    assert output.count("Error: gigi.channel.pause denied") == 1, output
    assert "Error: gigi.channel.secure denied" in output
    assert "gigi.channel.manage" in output
    assert await kernel.channels.get("console", "console") == "active"
    assert await kernel.channels.secure_ranges("console") == []


# -- the kernel API and the direct path ------------------------------------------------------


async def test_secure_to_active_closes_the_range_and_a_new_secure_opens_another(env) -> None:
    kernel, _ = env
    first = await kernel.set_channel_state("g1", "c1", "secure", by="alice")
    assert (first.before, first.after) == ("active", "secure")
    again = await kernel.set_channel_state("g1", "c1", "secure", by="alice")
    assert (again.before, again.after) == ("secure", "secure")
    [open_range] = await kernel.channels.secure_ranges("g1", "c1")  # no second range
    assert open_range.ended_at is None
    await kernel.set_channel_state("g1", "c1", "active", by="alice")
    [closed] = await kernel.channels.secure_ranges("g1", "c1")
    assert closed.ended_at is not None and closed.ended_at >= closed.started_at
    await kernel.set_channel_state("g1", "c1", "secure", by="bob-admin")
    await kernel.set_channel_state("g1", "c1", "paused", by="bob-admin")  # leaving secure
    ranges = await kernel.channels.secure_ranges("g1", "c1")
    assert len(ranges) == 2 and all(r.ended_at is not None for r in ranges)
    assert ranges[1].started_by == "bob-admin"
    assert await kernel.channels.secure_ranges("g1", "other") == []
    assert await kernel.channels.states("g1") == {"c1": "paused"}


async def test_paused_spans_are_recorded_apart_from_secure_ones(env) -> None:
    """A backfill must skip paused periods too, so each pause is a range of its own."""
    kernel, _ = env
    await kernel.set_channel_state("g1", "c2", "paused", by="alice")
    [open_pause] = await kernel.channels.pause_ranges("g1", "c2")
    assert open_pause.ended_at is None and open_pause.started_by == "alice"
    assert await kernel.channels.secure_ranges("g1", "c2") == []
    await kernel.set_channel_state("g1", "c2", "paused", by="alice")  # no change: no new range
    await kernel.set_channel_state("g1", "c2", "secure", by="bob-admin")  # pause ends here
    [closed_pause] = await kernel.channels.pause_ranges("g1", "c2")
    [open_secure] = await kernel.channels.secure_ranges("g1", "c2")
    assert closed_pause.ended_at is not None and open_secure.ended_at is None
    assert open_secure.started_at >= closed_pause.ended_at
    await kernel.set_channel_state("g1", "c2", "active", by="alice")
    await kernel.set_channel_state("g1", "c2", "paused", by="alice")
    await kernel.set_channel_state("g1", "c2", "active", by="alice")
    pauses = await kernel.channels.pause_ranges("g1", "c2")
    assert len(pauses) == 2 and all(r.ended_at is not None for r in pauses)
    assert [r.state for r in await kernel.channels.secure_ranges("g1")] == ["secure"]
    assert await kernel.channels.pause_ranges("g1", "other") == []


async def test_concurrent_changes_of_a_new_channel_all_succeed(env) -> None:
    """Two admins securing (or pausing) a channel at the same moment: no error, one range."""
    kernel, _ = env
    changes = await asyncio.gather(
        *(kernel.channels.set("g1", "busy", "secure", by=f"admin{i}") for i in range(8)),
        *(kernel.channels.set("g1", f"new{i % 2}", "paused") for i in range(6)),
    )
    secured = [c for c in changes[:8] if c.before != "secure"]
    assert len(secured) == 1  # exactly one of them saw the channel active
    [secure_range] = await kernel.channels.secure_ranges("g1", "busy")
    assert secure_range.ended_at is None
    assert await kernel.channels.states("g1") == {
        "busy": "secure",
        "new0": "paused",
        "new1": "paused",
    }


@pytest.mark.parametrize("state", ["hidden", "PAUSED", "", "resume"])
async def test_an_invalid_state_is_a_config_error(env, state) -> None:
    kernel, _ = env
    with pytest.raises(ConfigError) as info:
        await kernel.set_channel_state("g1", "c1", state, by="alice")
    assert "channel state must be one of active, paused, secure" in str(info.value)
    assert repr(state) in str(info.value)
    assert await kernel.channels.get("g1", "c1") == "active"
    assert await kernel.channels.states("g1") == {}


async def test_non_admin_is_denied_until_granted(env) -> None:
    kernel, _ = env
    with pytest.raises(PolicyDenied, match="gigi.channel.manage"):
        await kernel.agent.direct(req(BOB), "gigi.channel.pause", {})
    assert await kernel.channels.get("g1", "c1") == "active"
    await kernel.add_grant("g1", "gigi.channel.manage", "user", BOB.id)
    result = result_of(await kernel.agent.direct(req(BOB), "gigi.channel.pause", {}))
    assert result["state"] == "paused" and result["channel_id"] == "c1"
    await kernel.remove_grant("g1", "gigi.channel.manage", "user", BOB.id)
    with pytest.raises(PolicyDenied):
        await kernel.agent.direct(req(BOB), "gigi.channel.resume", {})
    assert await kernel.channels.get("g1", "c1") == "paused"


async def test_paused_and_secure_channels_deliver_no_messages_but_commands_still_work(
    env,
) -> None:
    kernel, watcher = env
    await kernel.set_channel_state("g1", "quiet", "paused", by="alice")
    await kernel.set_channel_state("g1", "vault", "secure", by="alice")
    for channel in ("quiet", "vault", "open"):
        await kernel.publish(message(channel))
    await kernel.publish(message("thread-1", parent_channel_id="vault"))  # a thread inside
    await kernel.events.drain()
    seen = [e.channel_id for e in watcher.seen if isinstance(e, MessageCreated)]
    assert seen == ["open"]
    # commands still work in a paused channel
    status = result_of(await kernel.agent.direct(req(ALICE, "quiet"), "gigi.channel.status", {}))
    assert status["state"] == "paused"
    result = result_of(await kernel.agent.direct(req(ALICE, "vault"), "gigi.channel.resume", {}))
    assert result["before"] == "secure" and result["state"] == "active"
    await kernel.publish(message("vault", "again"))
    await kernel.events.drain()
    assert [e.channel_id for e in watcher.seen if isinstance(e, MessageCreated)][-1] == "vault"


async def test_audit_rows_hold_metadata_only(env) -> None:
    kernel, _ = env
    await kernel.publish(message("c1", CANARY))
    await kernel.agent.direct(req(ALICE), "gigi.channel.secure", {})
    await kernel.agent.direct(req(ALICE), "gigi.channel.resume", {"channel": "c1"})
    await kernel.events.drain()
    async with kernel.db.session() as s:
        rows = (
            await s.scalars(
                select(AuditEvent).where(AuditEvent.kind == "channel.state").order_by(AuditEvent.id)
            )
        ).all()
    assert [(r.status, r.actor_id, r.guild_id, r.channel_id) for r in rows] == [
        ("secure", "alice", "g1", "c1"),
        ("active", "alice", "g1", "c1"),
    ]
    assert {r.capability for r in rows} == {"gigi.channel.manage"}
    # neither the reply's sentences nor a message's text are stored anywhere in plain text
    assert await leaks(kernel, CANARY, "no plugin sees messages", "drop what they hold") == []


# -- the CLI --------------------------------------------------------------------------------


@pytest.fixture
def gigi(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "")
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    return invoke


def test_cli_pause_secure_resume_and_status(gigi, database_url, tmp_path) -> None:
    where = ("--guild", "g1", "--channel", "c7")
    result = gigi("channel", "pause", *where, "--by", "ops")
    assert result.exit_code == 0, result.output
    assert "Channel c7 in guild g1: paused." in result.output
    assert "Paused: no plugin sees messages in c7 from now on." in result.output
    assert "@mentions and commands still work there" in result.output
    assert "<#" not in result.output
    assert "(no change)" in gigi("channel", "pause", *where).output
    result = gigi("channel", "secure", *where, "--by", "ops")
    assert "Channel c7 in guild g1: secure." in result.output
    assert "plugins were told to drop what they hold in memory" in result.output
    assert gigi("channel", "status", "--guild", "g1").output.strip() == "c7: secure"
    assert "c7 in guild g1: secure." in gigi("channel", "status", *where).output
    listed = json.loads(gigi("channel", "status", "--guild", "g1", "--json").output)
    assert listed == {"guild": "g1", "channels": [{"channel": "c7", "state": "secure"}]}
    one = json.loads(gigi("channel", "status", "--guild", "g1", "--channel", "c8", "--json").output)
    assert one["channels"] == [{"channel": "c8", "state": "active"}]
    result = gigi("channel", "resume", *where)
    assert "Channel c7 in guild g1: active." in result.output
    assert "see new messages in c7 again" in result.output
    assert (
        "Every channel of guild g1 is active." in gigi("channel", "status", "--guild", "g1").output
    )

    async def check() -> list[Any]:
        async with open_test_kernel(tmp_path, plugins=[], database_url=database_url) as kernel:
            return await kernel.channels.secure_ranges("g1", "c7")

    [secure_range] = asyncio.run(check())
    assert secure_range.started_by == "ops" and secure_range.ended_at is not None


def test_cli_needs_guild_and_channel(gigi) -> None:
    result = gigi("channel", "pause", "--guild", "g1")
    assert result.exit_code == 2 and "--channel" in result.output


def test_commands_list_shows_the_channel_commands_for_admins(gigi) -> None:
    rows = {r["command"]: r for r in json.loads(gigi("commands", "list", "--json").output)}
    for verb in ("pause", "resume", "secure", "status"):
        row = rows[f"gigi channel {verb}"]
        assert row["capability"] == "gigi.channel.manage" and row["admin_default"] is True
        assert [o["type"] for o in row["options"]] == ["channel"]


async def test_a_channel_the_caller_cannot_see_cannot_be_paused(env) -> None:
    """Channel-typed options get the same visibility check as x-gigi-channel arguments."""
    kernel, _ = env

    async def sees_only_c1(channel_id: str) -> bool:
        return channel_id == "c1"

    hidden = Request(
        actor=ALICE,
        guild_id="g1",
        channel_id="c1",
        kind="slash",
        text="",
        channel_visible=sees_only_c1,
    )
    for action in ("gigi.channel.pause", "gigi.channel.secure", "gigi.channel.status"):
        with pytest.raises(PolicyDenied, match="cannot view that channel"):
            await kernel.agent.direct(hidden, action, {"channel": "secret"})
    assert await kernel.channels.get("g1", "secret") == "active"
    reply = await kernel.agent.direct(hidden, "gigi.channel.pause", {"channel": "c1"})
    assert result_of(reply)["state"] == "paused"


async def test_a_channel_outside_a_public_answers_audience_cannot_be_named(env) -> None:
    """The actor may read #mods, but the answer is shown where others read it: the surface's
    ``visible_channels`` (narrowed to that audience) bounds channel arguments too."""
    kernel, _ = env

    async def sees_all(channel_id: str) -> bool:
        return True

    async def audience() -> frozenset[str]:
        return frozenset({"c1", "general"})

    public = Request(
        actor=ALICE,
        guild_id="g1",
        channel_id="c1",
        kind="mention",
        text="",
        channel_visible=sees_all,
        visible_channels=audience,
    )
    with pytest.raises(PolicyDenied, match="not everyone who will see this answer"):
        await kernel.agent.direct(public, "gigi.channel.status", {"channel": "mods"})
    rows = await kernel.audit.recent("g1", limit=5)
    denial = next(r for r in rows if r["action"] == "gigi.channel.status")
    assert (denial["status"], denial["reason_code"]) == ("denied", "channel_outside_audience")
    reply = await kernel.agent.direct(public, "gigi.channel.status", {"channel": "general"})
    assert result_of(reply)["state"] == "active"
