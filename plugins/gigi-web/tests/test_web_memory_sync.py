"""Syncing a channel's history and purging all of a server's memory from the dashboard:
through the memory plugin's own actions as the member (memory.sync, memory.purge
everything:true, the latter only after its confirmation page), refused without
memory.manage.guild, the form's token, or for a channel hidden from the member in Discord."""

from __future__ import annotations

from datetime import UTC, datetime

import gigi_memory
import pytest
from web_world import ADMIN, ALPHA, BASE, MEMBER

from gigi_core import Actor, AuditFilter, query_audit
from gigi_core.events import MessageCreated

pytestmark = pytest.mark.parametrize("dashboard", [{"plugins": ["memory"]}], indirect=True)
ADMIN_ACTOR = Actor(id=ADMIN, is_admin=True)
VIEW = 1 << 10  # Discord's View Channel permission
OTHER, HIDDEN = "8003", "8002"


async def _status(kernel) -> dict:
    status = await kernel.call_tool("memory.status", {}, actor=ADMIN_ACTOR, guild_id=ALPHA)
    return status.result


async def _remember(kernel, channel: str, n: int) -> None:
    """``channel`` remembered for 30 days, with ``n`` messages stored."""
    await kernel.call_tool(
        "memory.enable", {"channel": channel, "retention_days": 30}, actor=ADMIN_ACTOR,
        guild_id=ALPHA, channel_id=channel,
    )  # fmt: skip
    for i in range(n):
        await kernel.publish(
            MessageCreated(
                guild_id=ALPHA,
                channel_id=channel,
                message_id=f"{channel}{i:04d}",
                author_id=MEMBER,
                created_at=datetime.now(UTC),
                text=f"note {i}",
            )
        )
    await kernel.events.drain()
    assert await gigi_memory.flush(kernel, 30)


def _stored(status: dict) -> dict[str, int]:
    return {c["channel_id"]: c["messages"] for c in status["channels"]}


def _hide(dashboard) -> None:
    """#hidden (8002): closed to everyone but ADMIN in Discord."""
    guild = dashboard.fake.guilds[ALPHA]
    guild.channels[HIDDEN] = "hidden <i>room</i>"
    guild.overwrites[HIDDEN] = [
        {"id": ALPHA, "type": 0, "allow": "0", "deny": str(VIEW)},
        {"id": ADMIN, "type": 1, "allow": str(VIEW), "deny": "0"},
    ]


async def _audited(kernel, action: str) -> set[str]:
    """Who ran ``action`` (its audit rows that ran: ok, not a refusal)."""
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, action=action, outcome="ok"))
    return {r["actor_id"] for r in rows.rows}


async def _syncs(kernel) -> list:
    return [j for j in await kernel.jobs.list(None, 100, guild_id=ALPHA) if j.name == "memory.sync"]


async def test_an_admin_queues_a_sync_and_is_pointed_at_the_jobs_page(dashboard) -> None:
    kernel = dashboard.kernel
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    path = f"/g/{ALPHA}/memory/sync"
    empty = await ada.client.get(f"/g/{ALPHA}/memory")
    assert "Remember a channel first" in empty.text and path not in empty.text
    not_remembered = await ada.post(path, {"channel": "8001"})
    assert not_remembered.status_code == 400 and "/memory enable" in not_remembered.text
    await _remember(kernel, "8001", 1)
    page = await ada.client.get(f"/g/{ALPHA}/memory")
    assert f'action="{path}"' in page.text and '<option value="8001">#&lt;script&gt;' in page.text
    for bad in ("0", "3651", "abc", "²", "-5"):
        refused = await ada.post(path, {"channel": "8001", "days": bad})
        assert refused.status_code == 400 and "Days (sync)" in refused.text, bad
    assert await _syncs(kernel) == []
    elsewhere = await ada.post(path, {"channel": "4242"})
    assert elsewhere.status_code == 404
    done = await ada.post(path, {"channel": "8001", "days": "30"})
    assert done.status_code == 303 and done.headers["location"].endswith("/memory#sync")
    [job] = await _syncs(kernel)
    assert job.status in ("queued", "running", "failed")
    shown = await ada.client.get(f"/g/{ALPHA}/memory")
    assert "runs in the background" in shown.text and "Jobs page" in shown.text
    assert f'href="/g/{ALPHA}/jobs"' in shown.text and "last sync" in shown.text
    jobs = await ada.client.get(f"/g/{ALPHA}/jobs")
    assert jobs.status_code == 200 and "memory.sync" in jobs.text
    assert await _audited(kernel, "memory.sync") == {ADMIN}


async def test_a_sync_needs_memory_manage_the_token_and_a_visible_channel(dashboard) -> None:
    kernel = dashboard.kernel
    _hide(dashboard)
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    await _remember(kernel, "8001", 0)
    await _remember(kernel, HIDDEN, 0)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    path = f"/g/{ALPHA}/memory/sync"
    refused = await bob.post(path, {"channel": "8001"})
    assert refused.status_code == 403 and "memory.manage.guild" in refused.text
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    no_token = await bob.client.post(path, data={"channel": "8001"}, headers={"Origin": BASE})
    assert no_token.status_code == 403
    page = await bob.client.get(f"/g/{ALPHA}/memory")
    assert 'value="8001"' in page.text and HIDDEN not in page.text
    hidden = await bob.post(path, {"channel": HIDDEN})
    assert hidden.status_code == 403 and "cannot see that channel in Discord" in hidden.text
    assert await _syncs(kernel) == [] and await _audited(kernel, "memory.sync") == set()
    assert (await bob.post(path, {"channel": "8001"})).status_code == 303
    assert len(await _syncs(kernel)) == 1 and await _audited(kernel, "memory.sync") == {MEMBER}


async def test_purge_all_of_the_servers_memory_after_its_confirmation_page(dashboard) -> None:
    kernel = dashboard.kernel
    dashboard.fake.guilds[ALPHA].channels[OTHER] = "other"
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    await _remember(kernel, "8001", 3)
    await _remember(kernel, OTHER, 2)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    page = await ada.client.get(f"/g/{ALPHA}/memory")
    assert f"/g/{ALPHA}/memory/purge?everything=yes" in page.text
    ask = await ada.client.get(f"/g/{ALPHA}/memory/purge", params={"everything": "yes"})
    assert ask.status_code == 200 and "cannot be undone" in ask.text
    assert "5 stored message(s) over 2" in ask.text and 'name="everything" value="yes"' in ask.text
    path = f"/g/{ALPHA}/memory/purge"
    unticked = await ada.post(path, {"everything": "yes"})
    assert unticked.status_code == 400 and "I understand" in unticked.text
    assert "nothing was deleted" in unticked.text
    assert _stored(await _status(kernel)) == {"8001": 3, OTHER: 2}
    assert await _audited(kernel, "memory.purge") == set()
    done = await ada.post(path, {"everything": "yes", "confirm": "on"})
    assert done.status_code == 303, done.text
    status = await _status(kernel)
    assert set(_stored(status).values()) == {0}
    assert {c["channel_id"]: c["mode"] for c in status["channels"]} == {"8001": "on", OTHER: "on"}
    shown = await ada.client.get(f"/g/{ALPHA}/memory")
    assert "Purged 5 stored message(s) of every channel" in shown.text
    assert await _audited(kernel, "memory.purge") == {ADMIN}


async def test_purge_all_needs_memory_manage_the_token_and_every_channel_seen(dashboard) -> None:
    kernel = dashboard.kernel
    _hide(dashboard)
    await kernel.enable_plugin(ALPHA, "memory", by=ADMIN)
    await _remember(kernel, "8001", 2)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    path, data = f"/g/{ALPHA}/memory/purge", {"everything": "yes", "confirm": "on"}
    refused = await bob.post(path, data)
    assert refused.status_code == 403 and "memory.manage.guild" in refused.text
    asked = await bob.client.get(path, params={"everything": "yes"})
    assert asked.status_code == 403
    await kernel.add_grant(ALPHA, "memory.manage.guild", "user", MEMBER, by=ADMIN)
    no_token = await bob.client.post(path, data=data, headers={"Origin": BASE})
    assert no_token.status_code == 403
    await _remember(kernel, HIDDEN, 1)  # messages of a channel bob cannot see
    for answer in (
        await bob.client.get(path, params={"everything": "yes"}),
        await bob.post(path, data),
    ):
        assert answer.status_code == 403 and "cannot see in Discord" in answer.text
        assert "3 stored" not in answer.text
    assert _stored(await _status(kernel)) == {"8001": 2, HIDDEN: 1}
    assert await _audited(kernel, "memory.purge") == set()
    ada = dashboard.browser()  # who sees every channel
    await ada.sign_in(ADMIN)
    assert (await ada.post(path, data)).status_code == 303
    assert set(_stored(await _status(kernel)).values()) == {0}
