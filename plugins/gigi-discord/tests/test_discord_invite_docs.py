"""docs/discord.md's invite link asks for exactly the permissions its table explains, and
for what the bot does: Attach Files (a long answer comes as ``answer.md``). Every plugin
whose manifest needs the Message Content intent is named where the intent is explained."""

from __future__ import annotations

import re
from pathlib import Path

import discord

from gigi_core.testing import load_test_plugins

DOC = Path(__file__).resolve().parents[3] / "docs" / "discord.md"


def test_the_invite_asks_for_what_the_table_lists_and_attach_files() -> None:
    text = DOC.read_text()
    value = int(re.search(r"oauth2/authorize\?[^\s]*permissions=(\d+)", text).group(1))
    asked = {name for name, on in discord.Permissions(value) if on}
    section = text.split("The permissions integer asks for")[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| ([A-Z][A-Za-z ]+) \|", section, flags=re.M)
    names = {"View Channels": "read_messages"}  # discord.py's name for View Channels
    listed = {names.get(r, r.lower().replace(" ", "_")) for r in rows if r != "permission"}
    assert asked == listed
    assert "attach_files" in asked  # long answers are attached as answer.md


def test_every_plugin_needing_message_content_is_named_in_the_intent_list() -> None:
    loaded = load_test_plugins(["memory", "knowledge", "ambient"], strict=False)
    needing = {
        name
        for name, m in loaded.registry.manifests.items()
        if "message_content" in (m.plugin.intents or [])
    }
    assert {"memory", "knowledge", "ambient"} <= needing
    bullet = DOC.read_text().split("**Message Content Intent**")[1].split("- **")[0]
    for plugin in needing:
        assert plugin in bullet, plugin
