"""Denied paths of the dashboard's newer POST routes (Memory sync and purge, Knowledge edits)
not attacked elsewhere: another server's admin, another server's ids and channels, records
of a channel hidden from the member, another session's CSRF token, permissions lost in
Discord mid-session, a signed-out or expired session replayed, and what the audit keeps.
Each denial is checked twice: the answer, and that nothing changed in the store."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import gigi_memory
import httpx
import pytest
import sqlalchemy as sa
from gigi_knowledge import tables as ktables
from gigi_knowledge.service import ready
from gigi_web.fake_discord import VIEW_CHANNEL, FakeMember
from gigi_web.tables import sessions as session_table
from web_world import ADMIN, ALPHA, BASE, BETA, MEMBER, Browser

from gigi_core import Actor, AuditFilter, query_audit
from gigi_core.events import MessageCreated

BOTH = {"plugins": ["memory", "knowledge"]}
with_both = pytest.mark.parametrize("dashboard", [BOTH], indirect=True)
VIEW = 1 << 10  # Discord's View Channel permission
CHAN, HIDDEN, BETA_CHAN, THREAD = "8001", "8002", "8101", "8301"
BETA_ONLY = "1004"  # a member of Beta, not of Alpha
ACTION_TEXT = "Rotate the <b>prod</b> keys"
MESSAGE_TEXT = "the vault passphrase is hunter2"


def _actor(guild: str) -> Actor:
    return Actor(id=ADMIN if guild == ALPHA else MEMBER, is_admin=True)


def _world(dashboard) -> None:
    """#hidden in Alpha: closed to everyone but ADMIN; Beta gets a channel and a member of
    its own."""
    fake = dashboard.fake
    alpha, beta = fake.guilds[ALPHA], fake.guilds[BETA]
    alpha.channels[HIDDEN] = "hidden"
    alpha.overwrites[HIDDEN] = [
        {"id": ALPHA, "type": 0, "allow": "0", "deny": str(VIEW)},
        {"id": ADMIN, "type": 1, "allow": str(VIEW), "deny": "0"},
    ]
    beta.channels[BETA_CHAN] = "beta-general"
    fake.add_user(BETA_ONLY, "dee")
    beta.members[BETA_ONLY] = FakeMember()


async def _remember(kernel, guild: str, channel: str, n: int, **event: str) -> None:
    await kernel.call_tool(
        "memory.enable", {"channel": channel, "retention_days": 30}, actor=_actor(guild),
        guild_id=guild, channel_id=channel,
    )  # fmt: skip
    for i in range(n):
        await kernel.publish(
            MessageCreated(
                guild_id=guild, channel_id=channel, message_id=f"{channel}{i:04d}",
                author_id=MEMBER, created_at=datetime.now(UTC), text=f"{MESSAGE_TEXT} {i}",
                **event,
            )
        )  # fmt: skip
    await kernel.events.drain()
    assert await gigi_memory.flush(kernel, 30)


async def _stored(kernel, guild: str = ALPHA) -> dict[str, int]:
    status = await kernel.call_tool("memory.status", {}, actor=_actor(guild), guild_id=guild)
    return {c["channel_id"]: c["messages"] for c in status.result["channels"]}


async def _rows(kernel, guild: str) -> int:
    """Every stored message of ``guild``, threads and expired rows included."""
    async with kernel.db.engine.connect() as conn:
        found = await conn.execute(
            sa.text("SELECT count(*) FROM memory_messages WHERE guild_id = :g"), {"g": guild}
        )
        return int(found.scalar_one())


async def _syncs(kernel, guild: str = ALPHA) -> list:
    return [j for j in await kernel.jobs.list(None, 100, guild_id=guild) if j.name == "memory.sync"]


async def _knowledge(kernel) -> dict[str, str]:
    """An action and an open contradiction note in Alpha's #8001, in Alpha's #hidden and in
    Beta: the action owned by MEMBER (bob)."""
    svc = await ready(kernel)
    ids: dict[str, str] = {}
    now = int(time.time() * 1000)
    async with svc.engine.begin() as conn:
        for key, guild, channel in (("", ALPHA, CHAN), ("hidden_", ALPHA, HIDDEN), ("beta_", BETA, CHAN)):  # fmt: skip
            decisions = []
            for summary, ago in (("Deploy on Fridays", 3_600_000), ("Never on Fridays", 60_000)):
                did = str(uuid.uuid4())
                await conn.execute(
                    ktables.decisions.insert().values(
                        id=did, guild_id=guild, channel_id=channel, summary=summary,
                        rationale=None, decided_by=[MEMBER], asserted_by=[MEMBER],
                        decided_ms=now - ago, confidence=0.9, status="active",
                        superseded_by=None, tags=[], source_ref={}, created_ms=now - ago,
                    )
                )  # fmt: skip
                decisions.append(did)
            ids[key + "note"] = str(uuid.uuid4())
            await conn.execute(
                ktables.contradictions.insert().values(
                    id=ids[key + "note"], guild_id=guild, channel_id=channel,
                    earlier_id=decisions[0], later_id=decisions[1], similarity=0.9,
                    status="posted", posted_message_id=None, created_ms=now, updated_ms=now,
                )
            )  # fmt: skip
            ids[key + "action"] = str(uuid.uuid4())
            await conn.execute(
                ktables.actions.insert().values(
                    id=ids[key + "action"], guild_id=guild, channel_id=channel,
                    description=ACTION_TEXT, owner_id=MEMBER, owner_name=None,
                    deadline_ms=None, status="open", staleness_ms=None, confidence=0.8,
                    tags=[], source_ref={}, related_decision=None, asserted_by=[MEMBER],
                    created_ms=now,
                )
            )  # fmt: skip
    return ids


async def _records(kernel) -> dict[str, tuple]:
    """Every action's (status, owner) and every note's status, by id; every context row."""
    svc = await ready(kernel)
    async with svc.engine.connect() as conn:
        actions = await conn.execute(sa.select(ktables.actions))
        notes = await conn.execute(sa.select(ktables.contradictions))
        decisions = await conn.execute(sa.select(ktables.decisions))
        found = {r.id: (r.status, r.owner_id) for r in actions}
        found |= {r.id: (r.status,) for r in notes}
        found |= {r.id: (r.status, r.superseded_by) for r in decisions}
    return found


async def _contexts(kernel, guild: str, channel: str) -> object:
    outcome = await kernel.call_tool(
        "knowledge.context", {}, actor=_actor(guild), guild_id=guild, channel_id=channel
    )
    return outcome.result["context"]


WRITES = {
    "knowledge.action_update",
    "knowledge.action_reassign",
    "knowledge.decision_supersede",
    "knowledge.decision_dismiss",
    "memory.purge",
    "memory.sync",
}


async def _writes(kernel, guild: str) -> list[tuple[str, str | None]]:
    rows = await query_audit(kernel.db, AuditFilter(guild_id=guild, outcome="ok", limit=500))
    # Any kind: a purge is audited on the agent's confirmed path, not as a plain tool call.
    return [(r["action"], r["actor_id"]) for r in rows.rows if r["action"] in WRITES]


def _edits(ids: dict[str, str], prefix: str, channel: str) -> list[tuple[str, dict[str, str]]]:
    """Each Knowledge edit route with a form aimed at the records named by ``prefix``."""
    return [
        ("action", {"channel": channel, "id": ids[prefix + "action"], "status": "done"}),
        ("reassign", {"channel": channel, "id": ids[prefix + "action"], "owner": ADMIN}),
        ("contradiction", {"channel": channel, "id": ids[prefix + "note"], "resolve": "supersede"}),
        ("contradiction", {"channel": channel, "id": ids[prefix + "note"], "resolve": "dismiss"}),
        ("context", {"channel": channel, "purpose": "Taken over", "type": "team"}),
    ]


def _memory_posts(channel: str) -> list[tuple[str, dict[str, str]]]:
    return [
        ("sync", {"channel": channel}),
        ("purge", {"channel": channel, "confirm": "on"}),
        ("purge", {"everything": "yes", "confirm": "on"}),
    ]


async def _everything(dashboard) -> dict[str, str]:
    """Both plugins on in both servers, memory and knowledge seeded: the knowledge ids."""
    kernel = dashboard.kernel
    _world(dashboard)
    for guild in (ALPHA, BETA):
        for plugin in ("memory", "knowledge"):
            await kernel.enable_plugin(guild, plugin, by=ADMIN if guild == ALPHA else MEMBER)
    await _remember(kernel, ALPHA, CHAN, 3)
    await _remember(kernel, BETA, BETA_CHAN, 2)
    return await _knowledge(kernel)


async def _snapshot(kernel) -> tuple:
    return (
        await _stored(kernel, ALPHA),
        await _stored(kernel, BETA),
        await _rows(kernel, ALPHA),
        await _rows(kernel, BETA),
        await _records(kernel),
        await _contexts(kernel, ALPHA, CHAN),
        await _contexts(kernel, BETA, CHAN),
        len(await _syncs(kernel, ALPHA)) + len(await _syncs(kernel, BETA)),
    )


# -- another server -----------------------------------------------------------------------------


@with_both
async def test_another_servers_admin_cannot_post_to_this_server(dashboard) -> None:
    """bob manages Beta, ada manages Alpha: neither session moves the other's server, with
    its own valid token and the other server's real ids and channels."""
    kernel = dashboard.kernel
    ids = await _everything(dashboard)
    before = await _snapshot(kernel)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    assert (await bob.client.get(f"/g/{BETA}/memory")).status_code == 200  # his own: open
    token = await bob.csrf()
    for route, data in _edits(ids, "", CHAN):
        refused = await bob.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf=token)
        assert refused.status_code == 403 and "knowledge.manage" in refused.text, route
    for route, data in _memory_posts(CHAN):
        refused = await bob.post(f"/g/{ALPHA}/memory/{route}", data, csrf=token)
        assert refused.status_code == 403 and "memory.manage.guild" in refused.text, route
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)  # a plain member in Beta
    token = await ada.csrf()
    for route, data in _edits(ids, "beta_", CHAN):
        refused = await ada.post(f"/g/{BETA}/knowledge/{route}", data, csrf=token)
        assert refused.status_code == 403, route
    for route, data in _memory_posts(BETA_CHAN):
        refused = await ada.post(f"/g/{BETA}/memory/{route}", data, csrf=token)
        assert refused.status_code == 403, route
    assert await _snapshot(kernel) == before
    assert await _writes(kernel, ALPHA) == [] and await _writes(kernel, BETA) == []


@with_both
async def test_another_servers_ids_and_channels_are_not_reached_from_this_one(dashboard) -> None:
    """ada is an admin here (the plugin lets an admin change any action): Beta's action and
    note ids, Beta's channel, a Beta-only member as owner, sent through Alpha's routes, are
    refused and Beta is unchanged."""
    kernel = dashboard.kernel
    ids = await _everything(dashboard)
    before = await _snapshot(kernel)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    token = await ada.csrf()
    for route, data in _edits(ids, "beta_", CHAN)[:4]:
        refused = await ada.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf=token)
        assert refused.status_code == 400 and data["id"] in refused.text, (route, data)
    # Beta's channel as the picked channel, or as a related channel of Alpha's context.
    for route, data in _edits(ids, "beta_", BETA_CHAN):
        refused = await ada.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf=token)
        assert refused.status_code == 404, route
    related = {"channel": CHAN, "related": BETA_CHAN}
    refused = await ada.post(f"/g/{ALPHA}/knowledge/context", related, csrf=token)
    assert refused.status_code == 400 and "Related channels (related)" in refused.text
    # A member of Beta only is no owner for Alpha's action.
    stranger = {"channel": CHAN, "id": ids["action"], "owner": BETA_ONLY}
    refused = await ada.post(f"/g/{ALPHA}/knowledge/reassign", stranger, csrf=token)
    assert refused.status_code == 400 and "not a member of this server" in refused.text
    # Beta's remembered channel through Alpha's Memory routes: not in this server.
    for route, data in _memory_posts(BETA_CHAN)[:2]:
        refused = await ada.post(f"/g/{ALPHA}/memory/{route}", data, csrf=token)
        assert refused.status_code == 404, route
    asked = await ada.client.get(f"/g/{ALPHA}/memory/purge", params={"channel": BETA_CHAN})
    assert asked.status_code == 404 and "2 now" not in asked.text
    assert await _snapshot(kernel) == before
    assert await _writes(kernel, ALPHA) == [] and await _writes(kernel, BETA) == []


# -- hidden channels ----------------------------------------------------------------------------


@with_both
async def test_records_and_memory_of_a_hidden_channel_are_out_of_reach(dashboard) -> None:
    """bob holds knowledge.manage and memory.manage.guild but cannot see #hidden: its
    records sent from a channel he sees, #hidden as a related channel, its purge (and the
    count its confirmation page would show) are refused; nothing changes."""
    kernel = dashboard.kernel
    ids = await _everything(dashboard)
    await _remember(kernel, ALPHA, HIDDEN, 4)
    for capability in ("knowledge.manage", "memory.manage.guild"):
        await kernel.add_grant(ALPHA, capability, "user", MEMBER, by=ADMIN)
    before = await _snapshot(kernel)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    token = await bob.csrf()
    for route, data in _edits(ids, "hidden_", CHAN)[:4]:
        refused = await bob.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf=token)
        assert refused.status_code == 400 and data["id"] in refused.text, (route, data)
        assert ACTION_TEXT not in refused.text
    related = {"channel": CHAN, "related": f"#{HIDDEN}"}
    refused = await bob.post(f"/g/{ALPHA}/knowledge/context", related, csrf=token)
    assert refused.status_code == 400 and "Related channels (related)" in refused.text
    asked = await bob.client.get(f"/g/{ALPHA}/memory/purge", params={"channel": HIDDEN})
    assert asked.status_code == 403 and "4 now" not in asked.text
    purge = await bob.post(f"/g/{ALPHA}/memory/purge", {"channel": HIDDEN, "confirm": "on"})
    assert purge.status_code == 403 and "cannot see that channel" in purge.text
    page = await bob.client.get(f"/g/{ALPHA}/memory")
    assert page.status_code == 200 and HIDDEN not in page.text
    assert await _snapshot(kernel) == before
    assert await _writes(kernel, ALPHA) == []


# -- the session --------------------------------------------------------------------------------


@with_both
async def test_another_sessions_csrf_token_is_refused(dashboard) -> None:
    """bob's valid token (he is granted everything here too) does not carry ada's forms."""
    kernel = dashboard.kernel
    ids = await _everything(dashboard)
    for capability in ("knowledge.manage", "memory.manage.guild"):
        await kernel.add_grant(ALPHA, capability, "user", MEMBER, by=ADMIN)
    before = await _snapshot(kernel)
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    bobs = await bob.csrf()
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    assert bobs != await ada.csrf()
    posts = [(f"knowledge/{r}", d) for r, d in _edits(ids, "", CHAN)]
    posts += [(f"memory/{r}", d) for r, d in _memory_posts(CHAN)]
    for path, data in posts:
        refused = await ada.post(f"/g/{ALPHA}/{path}", data, csrf=bobs)
        assert refused.status_code == 403 and "expired" in refused.text, path
    assert await _snapshot(kernel) == before
    assert await _writes(kernel, ALPHA) == []


@with_both
async def test_manage_server_lost_in_discord_is_honoured_on_the_next_post(dashboard) -> None:
    """ada's page and token are from while she managed Alpha; Discord now says she does not:
    her next POSTs are refused (the member is read again, as a command reads it)."""
    kernel = dashboard.kernel
    ids = await _everything(dashboard)
    before = await _snapshot(kernel)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    token = await ada.csrf(f"/g/{ALPHA}/memory")
    dashboard.fake.guilds[ALPHA].members[ADMIN].permissions = VIEW_CHANNEL
    posts = [(f"knowledge/{r}", d) for r, d in _edits(ids, "", CHAN)]
    posts += [(f"memory/{r}", d) for r, d in _memory_posts(CHAN)]
    for path, data in posts:
        refused = await ada.post(f"/g/{ALPHA}/{path}", data, csrf=token)
        assert refused.status_code == 403, path
    assert await _snapshot(kernel) == before
    assert await _writes(kernel, ALPHA) == []


async def _replayed(dashboard, cookie: str) -> Browser:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=dashboard.app), base_url=BASE)
    client.cookies.set("gigi_session", cookie)
    return Browser(client, dashboard.fake)


@pytest.mark.parametrize(
    "dashboard", [BOTH | {"session_recheck_seconds": 0.0}], indirect=True
)  # fmt: skip
async def test_a_signed_out_or_expired_session_cannot_post(dashboard) -> None:
    """The cookie and token of a session that signed out, or whose row expired, replayed
    from another client: refused, and nothing is deleted or queued."""
    kernel = dashboard.kernel
    ids = await _everything(dashboard)
    before = await _snapshot(kernel)
    posts = [(f"knowledge/{r}", d) for r, d in _edits(ids, "", CHAN)]
    posts += [(f"memory/{r}", d) for r, d in _memory_posts(CHAN)]
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    token, cookie = await ada.csrf(), ada.client.cookies["gigi_session"]
    assert (await ada.post("/signout", {}, csrf=token)).status_code == 303
    thief = await _replayed(dashboard, cookie)
    for path, data in posts:
        refused = await thief.post(f"/g/{ALPHA}/{path}", data, csrf=token)
        assert refused.status_code in (401, 403), path
    await ada.sign_in(ADMIN)
    token, cookie = await ada.csrf(), ada.client.cookies["gigi_session"]
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.update(session_table).values(expires=1.0))  # long past
    thief = await _replayed(dashboard, cookie)
    for path, data in posts:
        refused = await thief.post(f"/g/{ALPHA}/{path}", data, csrf=token)
        assert refused.status_code in (401, 403), path
    await thief.client.aclose()
    assert await _snapshot(kernel) == before
    assert await _writes(kernel, ALPHA) == []


# -- what the audit keeps -----------------------------------------------------------------------


@with_both
async def test_the_audit_of_edits_and_purges_holds_no_text(dashboard) -> None:
    """Allowed edits and a purge leave audit rows naming the action, never the action's
    text, the context set, or the purged messages' text."""
    kernel = dashboard.kernel
    ids = await _everything(dashboard)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    token = await ada.csrf()
    purpose = "Customer escalations for ACME-SECRET-PROJECT"
    edits = [*_edits(ids, "", CHAN)[:3], ("context", {"channel": CHAN, "purpose": purpose})]
    for route, data in edits:
        done = await ada.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf=token)
        assert done.status_code == 303, (route, done.text)
        if route == "action":  # the notice quotes the action's text, escaped
            shown = await ada.client.get(done.headers["location"])
            assert "Rotate the &lt;b&gt;prod&lt;/b&gt; keys" in shown.text
            assert ACTION_TEXT not in shown.text
    done = await ada.post(f"/g/{ALPHA}/memory/purge", {"channel": CHAN, "confirm": "on"})
    assert done.status_code == 303, done.text
    assert await _rows(kernel, ALPHA) == 0
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, limit=500))
    written = {r["action"] for r in rows.rows}
    assert {"knowledge.action_update", "knowledge.context", "memory.purge"} <= written
    dump = repr(rows.rows)
    for text in (ACTION_TEXT, purpose, MESSAGE_TEXT, "Deploy on Fridays", token):
        assert text not in dump, text
