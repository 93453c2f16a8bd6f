"""``gigi memory enable|disable|status|purge|policy`` on both backends: the slash commands'
actions through the kernel's direct path, acting as the operator or as a named member."""

from __future__ import annotations

import asyncio
import itertools
import json
from datetime import UTC, datetime
from typing import Any

import click
import gigi_memory
import pytest
from click.testing import CliRunner
from memory_helpers import count, publish

from gigi_core.events import MessageCreated
from gigi_core.testing import open_test_kernel

KEY = "b" * 43
_ids = itertools.count(1)


@pytest.fixture
def gigi(database_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``gigi memory ...`` against the test database; memory is enabled in g1."""
    monkeypatch.setenv("GIGI_SECRET_KEY", KEY)
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "memory")

    async def setup() -> None:
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
        ) as k:
            await k.enable_plugin("g1", "memory")

    asyncio.run(setup())

    @click.group()
    def root() -> None:
        pass

    gigi_memory.register_commands(root)
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(root, ["memory", *args], input=input)

    return invoke


def in_kernel(database_url: str, tmp_path: Any, body: Any) -> Any:
    async def run() -> Any:
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
        ) as k:
            return await body(k)

    return asyncio.run(run())


def message(text: str, channel: str = "c1") -> MessageCreated:
    return MessageCreated(
        guild_id="g1",
        message_id=f"9{next(_ids)}",
        channel_id=channel,
        author_id="u1",
        created_at=datetime.now(UTC),
        text=text,
    )


def test_enable_status_disable_from_a_shell(gigi, database_url, tmp_path) -> None:
    refused = gigi("enable", "--guild", "g1", "--channel", "c1")
    assert refused.exit_code == 1 and "set a retention first" in refused.output
    # The fix in the shell's syntax, not a slash command.
    assert "gigi memory enable --guild g1 --channel c1 --retention-days N" in refused.output
    assert "/memory" not in refused.output
    done = gigi("enable", "--guild", "g1", "--channel", "c1", "--retention-days", "30")
    assert done.exit_code == 0, done.output
    assert "channel c1: remembered from now on, kept 30 days (channel)" in done.output

    async def remember(k: Any) -> int:
        await publish(k, message("postgres talk"), message("other channel", channel="c2"))
        return await count(k, text="postgres")

    assert in_kernel(database_url, tmp_path, remember) == 1

    status = gigi("status", "--guild", "g1", "--json")
    assert status.exit_code == 0, status.output
    found = json.loads(status.output)
    [c1] = found["channels"]
    assert (c1["channel_id"], c1["mode"], c1["retention_days"], c1["messages"]) == (
        "c1",
        "on",
        30,
        1,
    )
    assert found["writer"]["dropped"] == 0 and found["policy"]["storage"] == "encrypted"
    text = gigi("status", "--guild", "g1")
    assert "c1: on, 30 days, 1 message(s)" in text.output
    assert "last retention purge: never" in text.output

    off = gigi("disable", "--guild", "g1", "--channel", "c1", "--json")
    assert json.loads(off.output) | {"note": ""} == {
        "channel_id": "c1",
        "mode": "off",
        "was": "on",
        "note": "",
    }
    assert in_kernel(database_url, tmp_path, remember) == 1  # c1 no longer remembers


def test_policy_shows_and_changes_and_refuses_bad_values(gigi) -> None:
    shown = gigi("policy", "--guild", "g1", "--json")
    assert json.loads(shown.output)["changed"] == []
    changed = gigi(
        "policy",
        "--guild",
        "g1",
        "--retention-days",
        "90",
        "--no-redact-phones",
        "--redact-add",
        r"PRJ-\d{4}",
    )
    assert changed.exit_code == 0, changed.output
    assert "changed: redaction, retention_days" in changed.output
    assert "default retention 90 days" in changed.output and r"PRJ-\d{4}" in changed.output
    # The server default now lets a channel be enabled without its own retention.
    enabled = gigi("enable", "--guild", "g1", "--channel", "c5", "--json")
    assert json.loads(enabled.output)["retention_source"] == "server default"
    bad = gigi("policy", "--guild", "g1", "--redact-add", "(?<=a)b")  # RE2 has no look-behind
    assert bad.exit_code == 1 and "redact_add" in bad.output
    wrong = gigi("policy", "--guild", "g1", "--storage", "plaintext")
    assert wrong.exit_code == 2  # click refuses it before anything runs


def test_purge_needs_confirmation_and_a_member_needs_the_capability(
    gigi, database_url, tmp_path, monkeypatch
) -> None:
    from gigi_memory.admin import cli_actions

    assert (
        gigi("enable", "--guild", "g1", "--channel", "c1", "--retention-days", "7").exit_code == 0
    )

    async def remember(k: Any) -> int:
        await publish(k, message("keep me"), message("and me"))
        return await count(k, author="u1")

    assert in_kernel(database_url, tmp_path, remember) == 2
    no_tty = gigi("purge", "--guild", "g1", "--channel", "c1")
    assert no_tty.exit_code == 2 and "--yes" in no_tty.output
    both = gigi("purge", "--guild", "g1", "--channel", "c1", "--everything", "--yes")
    assert both.exit_code == 2

    monkeypatch.setattr(cli_actions, "_terminal", lambda: True)
    declined = gigi("purge", "--guild", "g1", "--channel", "c1", input="n\n")
    assert declined.exit_code == 1 and "nothing was done" in declined.output

    async def left(k: Any) -> int:
        return await count(k, author="u1")

    assert in_kernel(database_url, tmp_path, left) == 2

    member = gigi("purge", "--guild", "g1", "--channel", "c1", "--yes", "--user", "u5")
    assert member.exit_code == 1 and "memory.manage.guild" in member.output
    assert in_kernel(database_url, tmp_path, left) == 2

    accepted = gigi("purge", "--guild", "g1", "--channel", "c1", input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert "purged 2 message(s) of channel c1" in accepted.output
    assert in_kernel(database_url, tmp_path, left) == 0

    async def audited(k: Any) -> list[tuple[str, str | None]]:
        rows = await k.audit.recent("g1", limit=200)
        return [(r["status"], r["actor_id"]) for r in rows if r["action"] == "memory.purge"]

    statuses = in_kernel(database_url, tmp_path, audited)
    assert ("ok", "operator") in statuses and ("denied", "u5") in statuses


def test_a_granted_member_may_and_a_guild_without_memory_says_so(
    gigi, database_url, tmp_path
) -> None:
    async def grant(k: Any) -> None:
        await k.add_grant("g1", "memory.manage.guild", "role", "mods", by="test")

    in_kernel(database_url, tmp_path, grant)
    mod = gigi("status", "--guild", "g1", "--user", "u9", "--role", "mods", "--json")
    assert mod.exit_code == 0, mod.output
    assert json.loads(mod.output)["channels"] == []
    elsewhere = gigi("status", "--guild", "g2")
    assert elsewhere.exit_code == 1 and "not enabled in this server" in elsewhere.output
