"""Memory's server policy and purging a channel from the dashboard: through the memory
plugin's own actions as the member (memory.policy, memory.purge), a purge only after its
confirmation page, refused without memory.manage.guild or the form's token."""

from __future__ import annotations

from datetime import UTC, datetime

import gigi_memory
import pytest
from web_world import ADMIN, ALPHA, BASE, EVIL_CHANNEL, MEMBER

from gigi_core import Actor, AuditFilter, query_audit
from gigi_core.events import MessageCreated

pytestmark = pytest.mark.parametrize("dashboard", [{"plugins": ["memory"]}], indirect=True)
ADMIN_ACTOR = Actor(id=ADMIN, is_admin=True)
EVIL_PATTERN = "<b>secret-[0-9]+</b>"


async def _status(kernel) -> dict:
    status = await kernel.call_tool("memory.status", {}, actor=ADMIN_ACTOR, guild_id=ALPHA)
    return status.result


async def _remembered(kernel, n: int) -> None:
    """Channel 8001 remembered, with ``n`` messages stored."""
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    await kernel.call_tool(
        "memory.enable", {"channel": "8001", "retention_days": 30}, actor=ADMIN_ACTOR,
        guild_id=ALPHA,
    )  # fmt: skip
    for i in range(n):
        await kernel.publish(
            MessageCreated(
                guild_id=ALPHA,
                channel_id="8001",
                message_id=str(5000 + i),
                author_id=MEMBER,
                created_at=datetime.now(UTC),
                text=f"note {i}",
            )
        )
    await kernel.events.drain()
    assert await gigi_memory.flush(kernel, 30)


def _messages(status: dict) -> int:
    return next((c["messages"] for c in status["channels"] if c["channel_id"] == "8001"), 0)


async def test_change_the_server_policy(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/memory")
    assert page.status_code == 200 and "Save the policy" in page.text
    path = f"/g/{ALPHA}/memory/policy"
    saved = await ada.post(
        path, {"retention_days": "45", "allow_bots": "yes", "redact_add": EVIL_PATTERN}
    )
    assert saved.status_code == 303
    policy = (await _status(kernel))["policy"]
    assert policy["retention_days"] == 45 and policy["allow_bots"] is True
    assert policy["redaction"]["patterns"] == [EVIL_PATTERN]
    shown = await ada.client.get(f"/g/{ALPHA}/memory")
    assert "Saved: " in shown.text and "retention_days" in shown.text
    assert "&lt;b&gt;secret-[0-9]+&lt;/b&gt;" in shown.text and EVIL_PATTERN not in shown.text

    stricter = await ada.post(path, {"storage": "metadata_only"})
    assert stricter.status_code == 400 and "next to Storage" in stricter.text
    assert (await _status(kernel))["policy"]["storage"] == "encrypted"
    confirmed = await ada.post(path, {"storage": "metadata_only", "confirm_storage": "on"})
    assert confirmed.status_code == 303
    assert (await _status(kernel))["policy"]["storage"] == "metadata_only"
    for bad, field in (
        ({"retention_days": "²"}, "Default retention"),
        ({"storage": "x"}, "Storage"),
    ):
        refused = await ada.post(path, bad)
        assert refused.status_code == 400 and field in refused.text
    removed = await ada.post(path, {"redact_remove": EVIL_PATTERN})
    assert removed.status_code == 303
    assert (await _status(kernel))["policy"]["redaction"]["patterns"] == []
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=ADMIN))
    assert [r["action"] for r in rows.rows if r["kind"] == "tool.call"].count("memory.policy") == 3


async def test_purge_a_channel_after_its_confirmation_page(dashboard) -> None:
    kernel = dashboard.kernel
    await _remembered(kernel, 3)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/memory")
    assert f"/g/{ALPHA}/memory/purge?channel=8001" in page.text
    ask = await ada.client.get(f"/g/{ALPHA}/memory/purge", params={"channel": "8001"})
    assert ask.status_code == 200 and "cannot be undone" in ask.text and "(3 now)" in ask.text
    assert "#&lt;script&gt;" in ask.text and EVIL_CHANNEL not in ask.text
    unticked = await ada.post(f"/g/{ALPHA}/memory/purge", {"channel": "8001"})
    assert unticked.status_code == 400 and "I understand" in unticked.text
    assert _messages(await _status(kernel)) == 3
    elsewhere = await ada.post(f"/g/{ALPHA}/memory/purge", {"channel": "4242", "confirm": "on"})
    assert elsewhere.status_code == 404
    done = await ada.post(f"/g/{ALPHA}/memory/purge", {"channel": "8001", "confirm": "on"})
    assert done.status_code == 303, done.text
    assert _messages(await _status(kernel)) == 0
    assert "Purged 3 stored message(s)" in (await ada.client.get(f"/g/{ALPHA}/memory")).text
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, action="memory.purge"))
    assert rows.rows and {r["actor_id"] for r in rows.rows} == {ADMIN}


async def test_policy_and_purge_need_memory_manage_and_the_token(dashboard) -> None:
    kernel = dashboard.kernel
    await _remembered(kernel, 2)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    purge = {"channel": "8001", "confirm": "on"}
    for path, data in (("policy", {"retention_days": "9"}), ("purge", purge)):
        refused = await bob.post(f"/g/{ALPHA}/memory/{path}", data)
        assert refused.status_code == 403 and "memory.manage.guild" in refused.text
    ask = await bob.client.get(f"/g/{ALPHA}/memory/purge", params={"channel": "8001"})
    assert ask.status_code == 403
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    for path, data in (("policy", {"retention_days": "9"}), ("purge", purge)):
        no_token = await bob.client.post(
            f"/g/{ALPHA}/memory/{path}", data=data, headers={"Origin": BASE}
        )
        assert no_token.status_code == 403
    status = await _status(kernel)
    assert status["policy"]["retention_days"] != 9 and _messages(status) == 2
    assert (await bob.post(f"/g/{ALPHA}/memory/purge", purge)).status_code == 303
    assert _messages(await _status(kernel)) == 0
