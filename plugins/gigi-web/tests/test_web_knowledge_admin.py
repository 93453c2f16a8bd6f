"""Knowledge extraction turned on and off per channel from the dashboard (the plugin's own
knowledge.enable / knowledge.disable as the member), and the page offering only channels
the member can see in Discord, by its permission overwrites."""

from __future__ import annotations

import pytest
from gigi_web.fake_discord import FakeGuild
from web_world import ADMIN, ALPHA, BASE, EVIL_CHANNEL, MEMBER

from gigi_core import Actor, AuditFilter, query_audit

pytestmark = pytest.mark.parametrize("dashboard", [{"plugins": ["knowledge"]}], indirect=True)
VIEW = 1 << 10
HIDDEN, MODS_ONLY = "8002", "8003"
EVIL_ZONE = "<b>Mars/Olympus</b>"


def _hide_channels(guild: FakeGuild) -> None:
    """#hidden: nobody but ADMIN (a member overwrite); #mods: only role 7001 (Mods)."""
    guild.channels.update({HIDDEN: "hidden <i>room</i>", MODS_ONLY: "mods"})
    guild.overwrites[HIDDEN] = [
        {"id": ALPHA, "type": 0, "allow": "0", "deny": str(VIEW)},
        {"id": ADMIN, "type": 1, "allow": str(VIEW), "deny": "0"},
    ]
    guild.overwrites[MODS_ONLY] = [
        {"id": ALPHA, "type": 0, "allow": "0", "deny": str(VIEW)},
        {"id": "7001", "type": 0, "allow": str(VIEW), "deny": "0"},
    ]


async def _knowledge_on(kernel, channel: str) -> str:
    status = await kernel.call_tool(
        "knowledge.status", {}, actor=Actor(id=ADMIN, is_admin=True), guild_id=ALPHA,
        channel_id=channel,
    )  # fmt: skip
    return status.result["knowledge"]


async def test_turn_extraction_on_and_off(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.enable_plugin(ALPHA, "knowledge", by=ADMIN)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": "8001"})
    assert "Turn extraction on" in page.text and "#&lt;script&gt;" in page.text
    assert EVIL_CHANNEL not in page.text
    path = f"/g/{ALPHA}/knowledge/set"
    bad_zone = await ada.post(path, {"channel": "8001", "mode": "on", "timezone": EVIL_ZONE})
    assert bad_zone.status_code == 400 and "&lt;b&gt;Mars" in bad_zone.text
    assert EVIL_ZONE not in bad_zone.text and await _knowledge_on(kernel, "8001") == "off"
    on = await ada.post(path, {"channel": "8001", "mode": "on", "timezone": "Europe/Paris"})
    assert on.status_code == 303 and await _knowledge_on(kernel, "8001") == "on"
    shown = await ada.client.get(on.headers["location"])
    assert "Extraction is on here" in shown.text and "Turn extraction off" in shown.text
    off = await ada.post(path, {"channel": "8001", "mode": "off"})
    assert off.status_code == 303 and await _knowledge_on(kernel, "8001") == "off"
    assert (await ada.post(path, {"channel": "8001", "mode": "maybe"})).status_code == 400
    assert (await ada.post(path, {"channel": "4242", "mode": "on"})).status_code == 404
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=ADMIN))
    actions = [r["action"] for r in rows.rows if r["kind"] == "tool.call"]
    assert "knowledge.enable" in actions and "knowledge.disable" in actions


async def test_only_channels_the_member_can_see(dashboard) -> None:
    kernel = dashboard.kernel
    _hide_channels(dashboard.fake.guilds[ALPHA])
    await kernel.enable_plugin(ALPHA, "knowledge", by=ADMIN)
    await kernel.add_grant(ALPHA, "knowledge.manage", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    picker = await bob.client.get(f"/g/{ALPHA}/knowledge")
    assert picker.status_code == 200 and 'value="8001"' in picker.text
    assert f'value="{HIDDEN}"' not in picker.text and f'value="{MODS_ONLY}"' not in picker.text
    for channel in (HIDDEN, MODS_ONLY):
        read = await bob.client.get(f"/g/{ALPHA}/knowledge", params={"channel": channel})
        assert read.status_code == 404 and "you can see" in read.text
        change = await bob.post(f"/g/{ALPHA}/knowledge/set", {"channel": channel, "mode": "on"})
        assert change.status_code == 404 and await _knowledge_on(kernel, channel) == "off"
    # Given the Mods role in Discord, bob sees #mods (within the seconds roles are trusted).
    dashboard.fake.guilds[ALPHA].members[MEMBER].roles.append("7001")
    assert 'value="8003"' in (await bob.client.get(f"/g/{ALPHA}/knowledge")).text
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    mine = await ada.client.get(f"/g/{ALPHA}/knowledge")
    assert f'value="{HIDDEN}"' in mine.text and "hidden &lt;i&gt;room" in mine.text
    assert f'value="{MODS_ONLY}"' not in mine.text  # Manage Server does not open a channel


async def test_extraction_needs_knowledge_manage_and_the_token(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.enable_plugin(ALPHA, "knowledge", by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    data = {"channel": "8001", "mode": "on"}
    refused = await bob.post(f"/g/{ALPHA}/knowledge/set", data)
    assert refused.status_code == 403 and "knowledge.manage" in refused.text
    await kernel.add_grant(ALPHA, "knowledge.manage", "user", MEMBER, by=ADMIN)
    no_token = await bob.client.post(
        f"/g/{ALPHA}/knowledge/set", data=data, headers={"Origin": BASE}
    )
    assert no_token.status_code == 403 and await _knowledge_on(kernel, "8001") == "off"
    assert (await bob.post(f"/g/{ALPHA}/knowledge/set", data)).status_code == 303
    assert await _knowledge_on(kernel, "8001") == "on"
