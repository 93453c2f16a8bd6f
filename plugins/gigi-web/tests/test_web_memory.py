"""The memory page: channels remembered, their retention, and changes made through the
memory plugin's own actions (kernel.call_tool as the member), only where memory is on and
only for channels the member can see in Discord."""

from __future__ import annotations

import pytest
from web_world import ADMIN, ALPHA, BASE, EVIL_CHANNEL, MEMBER

from gigi_core import Actor, AuditFilter, query_audit

pytestmark = pytest.mark.parametrize("dashboard", [{"plugins": ["memory"]}], indirect=True)
ADMIN_ACTOR = Actor(id=ADMIN, is_admin=True)
VIEW = 1 << 10  # Discord's View Channel permission
HIDDEN = "8002"


async def _channels(kernel) -> dict[str, dict]:
    status = await kernel.call_tool("memory.status", {}, actor=ADMIN_ACTOR, guild_id=ALPHA)
    return {c["channel_id"]: c for c in status.result["channels"]}


async def test_memory_page_only_where_the_plugin_is_enabled(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    off = await ada.client.get(f"/g/{ALPHA}/memory")
    assert off.status_code == 404 and "enable it on the Plugins page" in off.text
    plugins = await ada.client.get(f"/g/{ALPHA}/plugins")
    assert f'href="/g/{ALPHA}/memory"' not in plugins.text
    await dashboard.kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    on = await ada.client.get(f"/g/{ALPHA}/memory")
    assert on.status_code == 200 and f'href="/g/{ALPHA}/memory"' in on.text
    assert "#&lt;script&gt;" in on.text and EVIL_CHANNEL not in on.text


async def test_remember_change_retention_and_stop(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    path = f"/g/{ALPHA}/memory/set"
    no_days = await ada.post(path, {"channel": "8001", "mode": "on"})
    assert no_days.status_code == 400 and "Retention (days)" in no_days.text
    assert "8001" not in await _channels(kernel)
    bad = await ada.post(path, {"channel": "8001", "mode": "on", "retention_days": "0"})
    assert bad.status_code == 400  # the action's schema: at least 1 day
    done = await ada.post(path, {"channel": "8001", "mode": "on", "retention_days": "30"})
    assert done.status_code == 303
    assert (await _channels(kernel))["8001"]["retention_days"] == 30
    page = await ada.client.get(f"/g/{ALPHA}/memory")
    assert "for 30 days" in page.text and "30 days</td>" in page.text
    assert "Stop remembering" in page.text

    await ada.post(path, {"channel": "8001", "mode": "on", "retention_days": "7"})
    assert (await _channels(kernel))["8001"]["retention_days"] == 7
    stopped = await ada.post(path, {"channel": "8001", "mode": "off"})
    assert stopped.status_code == 303
    assert (await _channels(kernel))["8001"]["mode"] == "off"
    other = await ada.post(path, {"channel": "4242", "mode": "on", "retention_days": "3"})
    assert other.status_code == 404  # not a channel of this server
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=ADMIN))
    actions = [r["action"] for r in rows.rows if r["kind"] == "tool.call"]
    assert actions.count("memory.enable") >= 2 and "memory.disable" in actions


async def test_a_member_needs_memory_manage_and_the_token(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    data = {"channel": "8001", "mode": "on", "retention_days": "30"}
    assert (await bob.client.get(f"/g/{ALPHA}/memory")).status_code == 403
    refused = await bob.post(f"/g/{ALPHA}/memory/set", data)
    assert refused.status_code == 403 and "memory.manage.guild" in refused.text
    assert "8001" not in await _channels(kernel)
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    no_token = await bob.client.post(f"/g/{ALPHA}/memory/set", data=data, headers={"Origin": BASE})
    assert no_token.status_code == 403 and "8001" not in await _channels(kernel)
    assert (await bob.post(f"/g/{ALPHA}/memory/set", data)).status_code == 303
    assert (await _channels(kernel))["8001"]["mode"] == "on"
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=MEMBER))
    assert [r["action"] for r in rows.rows if r["kind"] == "tool.call"] == ["memory.enable"]


async def test_only_channels_the_member_can_see_are_listed_or_accepted(dashboard) -> None:
    """#hidden (8002) is closed to everyone but ADMIN in Discord: bob, granted
    memory.manage.guild, neither sees it listed nor can remember or purge it."""
    kernel = dashboard.kernel
    guild = dashboard.fake.guilds[ALPHA]
    guild.channels[HIDDEN] = "hidden <i>room</i>"
    guild.overwrites[HIDDEN] = [
        {"id": ALPHA, "type": 0, "allow": "0", "deny": str(VIEW)},
        {"id": ADMIN, "type": 1, "allow": str(VIEW), "deny": "0"},
    ]
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    await kernel.call_tool(
        "memory.enable", {"channel": HIDDEN, "retention_days": 9}, actor=ADMIN_ACTOR,
        guild_id=ALPHA, channel_id=HIDDEN,
    )  # fmt: skip
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    page = await bob.client.get(f"/g/{ALPHA}/memory")
    assert page.status_code == 200 and 'value="8001"' in page.text
    assert HIDDEN not in page.text and "hidden &lt;i&gt;room" not in page.text
    assert "9 days" not in page.text
    data = {"channel": HIDDEN, "mode": "off"}
    refused = await bob.post(f"/g/{ALPHA}/memory/set", data)
    assert refused.status_code == 403 and "cannot see that channel in Discord" in refused.text
    assert (await _channels(kernel))[HIDDEN]["mode"] == "on"
    asked = await bob.client.get(f"/g/{ALPHA}/memory/purge", params={"channel": HIDDEN})
    assert asked.status_code == 403 and HIDDEN not in asked.text.replace(ALPHA, "")
    purge = await bob.post(f"/g/{ALPHA}/memory/purge", {"channel": HIDDEN, "confirm": "on"})
    assert purge.status_code == 403 and HIDDEN in await _channels(kernel)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    mine = await ada.client.get(f"/g/{ALPHA}/memory")
    assert f'value="{HIDDEN}"' in mine.text and "hidden &lt;i&gt;room" in mine.text
    assert (await ada.post(f"/g/{ALPHA}/memory/set", data)).status_code == 303
    assert (await _channels(kernel))[HIDDEN]["mode"] == "off"
