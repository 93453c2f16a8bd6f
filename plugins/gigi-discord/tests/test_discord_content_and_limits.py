"""The Message Content notice for admins, Discord's command limits at start-up, settings."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from discord_watch_plugin import Watch
from discord_world import make_bot, world
from gigi_discord import create_bot
from gigi_discord.commands.manifest import RenderError
from gigi_discord.settings import DiscordSettings

from gigi_core import hookimpl
from gigi_core.testing import open_test_kernel

NOTICE = "Discord's Message Content intent"


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def test_admins_are_told_once_what_to_turn_on(tmp_path, caplog) -> None:
    watch = Watch(tmp_path)
    async with world(tmp_path, [], extra=[("watch", watch)]) as w:
        quiet = await w.admin.slash(w.channel, "gigi plugins list")  # nothing needs it yet
        assert NOTICE not in _text(quiet)
        enabled = await w.admin.slash(w.channel, "gigi plugins enable", plugin="watch")
        text = _text(enabled)
        assert text.startswith("Enabled **watch** in this server.")
        assert "Note: **watch** reads the messages in your channels" in text
        assert NOTICE in text and "GIGI_DISCORD_MESSAGE_CONTENT=1" in text
        assert "Privileged Gateway Intents" in text
        again = await w.admin.slash(w.channel, "gigi plugins list")
        assert NOTICE not in _text(again)  # once per server per process

        caplog.set_level(logging.WARNING, logger="gigi_discord.content_notice")
        await w.env.restart_bot(make_bot(w.kernel, None))
        w.bot = w.env.bot
        lines = [r for r in caplog.records if "Message Content intent is off" in r.getMessage()]
        assert len(lines) == 1 and w.gid in lines[0].getMessage()
        assert "watch" in lines[0].getMessage()


async def test_no_notice_when_the_intent_is_on(tmp_path) -> None:
    watch = Watch(tmp_path)
    settings = DiscordSettings(message_content=True)
    async with world(tmp_path, [], extra=[("watch", watch)], settings=settings) as w:
        enabled = await w.admin.slash(w.channel, "gigi plugins enable", plugin="watch")
        assert _text(enabled) == "Enabled **watch** in this server."


class Big:
    """25 subcommands with long descriptions: within the kernel's limits, but more text
    than Discord accepts for one command (8,000 characters)."""

    def __init__(self, tmp_path: Path) -> None:
        words = "x" * 90
        option = f"{{type: string, description: {words}}}"
        actions = "".join(
            f"""
  - name: big.c{i}
    command: big c{i}
    description: {words}
    safety: read_only
    capability: big.use
    args:
      type: object
      properties: {{a: {option}, b: {option}, c: {option}}}
      additionalProperties: false
"""
            for i in range(25)
        )
        self.path = tmp_path / "big.yaml"
        self.path.write_text(
            "manifest_version: 1\nplugin:\n  name: big\n  version: 0.0.1\n"
            "  description: Too big.\n  data_statement: Nothing.\n"
            "  capabilities:\n    - {name: big.use, description: Use, default: everyone}\n"
            f"actions:{actions}"
        )

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        async def run(ctx: Any, **args: Any) -> dict[str, Any]:
            return {}

        for i in range(25):
            register(f"big.c{i}", run)


async def test_commands_beyond_discords_limits_are_a_start_up_error(tmp_path) -> None:
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("big", Big(tmp_path))]) as k:
        assert len(k.commands.for_plugin("big")) == 25
        with pytest.raises(RenderError, match=r"plugin big: .*Discord allows 8000") as caught:
            create_bot(k, shard_count=1, settings=DiscordSettings())
        assert caught.value.plugin == "big"


def test_settings_for_members_and_forced_sync(monkeypatch) -> None:
    assert DiscordSettings.from_env().members is False
    monkeypatch.setenv("GIGI_DISCORD_MEMBERS", "1")
    monkeypatch.setenv("GIGI_DISCORD_SYNC", "force")
    s = DiscordSettings.from_env()
    assert (s.members, s.sync_commands, s.force_sync) == (True, True, True)
    monkeypatch.setenv("GIGI_DISCORD_SYNC", "0")
    assert DiscordSettings.from_env().sync_commands is False
