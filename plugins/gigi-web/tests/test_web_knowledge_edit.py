"""Editing recorded knowledge from the dashboard: actions marked done, reopened, cancelled
and reassigned, contradictions settled, a channel's context shown and set. Each is the
knowledge plugin's own action as the signed-in member in the picked channel, so the policy
engine decides and audits it; ids from the form are checked whole, records of another
channel or server are not found, channels hidden in Discord are refused."""

from __future__ import annotations

import time
import uuid

import pytest
from gigi_knowledge import tables
from gigi_knowledge.service import ready
from web_world import ADMIN, ALPHA, BASE, BETA, MEMBER, OUTSIDER

from gigi_core import Actor, AuditFilter, ToolError, query_audit

pytestmark = pytest.mark.parametrize("dashboard", [{"plugins": ["knowledge"]}], indirect=True)
VIEW = 1 << 10
CHAN, OTHER, HIDDEN = "8001", "8004", "8002"
EVIL_EARLIER = "Deploy on <b>Fridays</b>"
EVIL_LATER = "Never deploy on Fridays <script>alert('later')</script>"
EVIL_PURPOSE = "Ops <img src=x onerror=alert('purpose')>"


def _world(dashboard) -> None:
    """#other: everyone sees it; #hidden: only ADMIN (a member overwrite)."""
    guild = dashboard.fake.guilds[ALPHA]
    guild.channels.update({OTHER: "other", HIDDEN: "hidden"})
    guild.overwrites[HIDDEN] = [
        {"id": ALPHA, "type": 0, "allow": "0", "deny": str(VIEW)},
        {"id": ADMIN, "type": 1, "allow": str(VIEW), "deny": "0"},
    ]


async def _decision(conn, guild: str, channel: str, summary: str, by: str, ago_ms: int) -> str:
    did, now = str(uuid.uuid4()), int(time.time() * 1000) - ago_ms
    await conn.execute(
        tables.decisions.insert().values(
            id=did, guild_id=guild, channel_id=channel, summary=summary, rationale=None,
            decided_by=[by], asserted_by=[by], decided_ms=now, confidence=0.9, status="active",
            superseded_by=None, tags=[], source_ref={}, created_ms=now,
        )
    )  # fmt: skip
    return did


async def _action(conn, guild: str, channel: str, text: str, owner: str | None = "1002") -> str:
    aid, now = str(uuid.uuid4()), int(time.time() * 1000)
    await conn.execute(
        tables.actions.insert().values(
            id=aid, guild_id=guild, channel_id=channel, description=text, owner_id=owner,
            owner_name=None, deadline_ms=None, status="open", staleness_ms=None,
            confidence=0.8, tags=[], source_ref={}, related_decision=None,
            asserted_by=[owner] if owner else [], created_ms=now,
        )
    )  # fmt: skip
    return aid


async def _note(conn, guild: str, channel: str, earlier: str, later: str) -> str:
    nid, now = str(uuid.uuid4()), int(time.time() * 1000)
    await conn.execute(
        tables.contradictions.insert().values(
            id=nid, guild_id=guild, channel_id=channel, earlier_id=earlier, later_id=later,
            similarity=0.9, status="posted", posted_message_id=None, created_ms=now,
            updated_ms=now,
        )
    )  # fmt: skip
    return nid


async def _seed(kernel) -> dict[str, str]:
    await kernel.enable_plugin(ALPHA, "knowledge", by=ADMIN)
    await kernel.enable_plugin(BETA, "knowledge", by=ADMIN)
    svc = await ready(kernel)
    ids: dict[str, str] = {}
    async with svc.engine.begin() as conn:
        ids["earlier"] = await _decision(conn, ALPHA, CHAN, EVIL_EARLIER, ADMIN, 3_600_000)
        ids["later"] = await _decision(conn, ALPHA, CHAN, EVIL_LATER, MEMBER, 60_000)
        ids["note"] = await _note(conn, ALPHA, CHAN, ids["earlier"], ids["later"])
        ids["action"] = await _action(conn, ALPHA, CHAN, "Write the runbook")
        ids["unowned"] = await _action(conn, ALPHA, CHAN, "Renew the certificate", owner=None)
        ids["other"] = await _action(conn, ALPHA, OTHER, "Other channel's action")
        ids["hidden"] = await _action(conn, ALPHA, HIDDEN, "Hidden channel's action")
        ids["beta"] = await _action(conn, BETA, CHAN, "Another server's action")
        e2 = await _decision(conn, ALPHA, OTHER, "Use tabs", ADMIN, 3_600_000)
        l2 = await _decision(conn, ALPHA, OTHER, "Use spaces", ADMIN, 60_000)
        ids["other_note"] = await _note(conn, ALPHA, OTHER, e2, l2)
    return ids


async def _signed_in(dashboard, who: str = ADMIN, *, grant: bool = False):
    """The world seeded, ``who`` signed in (with a knowledge.manage grant if asked): the
    kernel, the seeded ids, the browser and its CSRF token."""
    kernel = dashboard.kernel
    _world(dashboard)
    ids = await _seed(kernel)
    if grant:
        await kernel.add_grant(ALPHA, "knowledge.manage", "user", who, by=ADMIN)
    browser = dashboard.browser()
    await browser.sign_in(who)
    return kernel, ids, browser, await browser.csrf()


async def _as_admin(kernel, action: str, channel: str, args: dict | None = None) -> dict:
    outcome = await kernel.call_tool(
        action, args or {}, actor=Actor(id=ADMIN, is_admin=True), guild_id=ALPHA,
        channel_id=channel,
    )  # fmt: skip
    return outcome.result


async def _actions(kernel, channel: str = CHAN) -> dict[str, dict]:
    found = await _as_admin(kernel, "knowledge.actions", channel, {"status": "all", "limit": 50})
    return {a["id"]: a for a in found["actions"]}


async def _decisions(kernel, channel: str = CHAN) -> dict:
    return await _as_admin(kernel, "knowledge.decisions", channel, {"status": "all", "limit": 50})


async def _beta_action(kernel, action_id: str) -> str:
    svc = await ready(kernel)
    async with svc.engine.connect() as conn:
        row = (
            await conn.execute(tables.actions.select().where(tables.actions.c.id == action_id))
        ).first()
    return f"{row.status}/{row.owner_id}"


async def _audited(kernel, actor: str = ADMIN) -> list[tuple[str, str]]:
    rows = await query_audit(kernel.db, AuditFilter(guild_id=ALPHA, actor_id=actor, limit=200))
    return [(r["action"], r["status"]) for r in rows.rows if r["kind"] == "tool.call"]


async def test_admin_marks_actions_done_reopens_cancels_and_reassigns(dashboard) -> None:
    kernel, ids, ada, token = await _signed_in(dashboard)
    page = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": CHAN})
    assert page.status_code == 200 and f'value="{ids["action"]}"' in page.text
    assert "Mark done" in page.text and "Reassign" in page.text
    # Owners and deciders known by id only are shown by their names in the server.
    assert "<td>Write the runbook</td><td>bob</td>" in page.text
    assert "<td>ada &lt;i&gt;admin&lt;/i&gt;</td>" in page.text
    path = f"/g/{ALPHA}/knowledge/action"
    for status, stored in (("done", "done"), ("in_progress", "open"), ("cancelled", "cancelled")):
        data = {"channel": CHAN, "id": ids["action"], "status": status}
        changed = await ada.post(path, data, csrf=token)
        assert changed.status_code == 303, changed.text
        assert (await _actions(kernel))[ids["action"]]["status"] == stored
    shown = await ada.client.get(changed.headers["location"])
    assert "Action cancelled: Write the runbook" in shown.text and "Reopen" in shown.text
    # An admin alone may change an action with no owner.
    data = {"channel": CHAN, "id": ids["unowned"], "status": "done"}
    assert (await ada.post(path, data, csrf=token)).status_code == 303
    assert (await _actions(kernel))[ids["unowned"]]["status"] == "done"
    reassign = f"/g/{ALPHA}/knowledge/reassign"
    given = await ada.post(
        reassign, {"channel": CHAN, "id": ids["action"], "owner": ADMIN}, csrf=token
    )
    assert given.status_code == 303 and (await _actions(kernel))[ids["action"]]["owner_id"] == ADMIN
    shown = await ada.client.get(given.headers["location"])
    assert "Action given to ada &lt;i&gt;admin&lt;/i&gt;: Write the runbook" in shown.text
    stranger = {"channel": CHAN, "id": ids["action"], "owner": OUTSIDER}
    refused = await ada.post(reassign, stranger, csrf=token)
    assert refused.status_code == 400 and "New owner (owner)" in refused.text
    assert "not a member of this server" in refused.text
    for owner in ("bob", "<b>1</b>", "1" * 21, "١٢٣", ""):
        bad = await ada.post(
            reassign, {"channel": CHAN, "id": ids["action"], "owner": owner}, csrf=token
        )
        assert bad.status_code == 400 and "New owner (owner)" in bad.text, owner
    assert (await _actions(kernel))[ids["action"]]["owner_id"] == ADMIN
    audited = await _audited(kernel)
    assert ("knowledge.action_update", "ok") in audited
    assert ("knowledge.action_reassign", "ok") in audited


async def test_admin_settles_contradictions(dashboard) -> None:
    kernel, ids, ada, token = await _signed_in(dashboard)
    page = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": CHAN})
    assert "Contradictions to settle" in page.text and f'value="{ids["note"]}"' in page.text
    assert "Deploy on &lt;b&gt;Fridays&lt;/b&gt;" in page.text and EVIL_EARLIER not in page.text
    assert "&lt;script&gt;alert(" in page.text and EVIL_LATER not in page.text
    assert "contradiction to settle" in page.text
    assert ids["other_note"] not in page.text  # another channel's note is not offered here
    path = f"/g/{ALPHA}/knowledge/contradiction"
    bad = await ada.post(path, {"channel": CHAN, "id": ids["note"], "resolve": "both"}, csrf=token)
    assert bad.status_code == 400 and "Settle (resolve)" in bad.text
    # Another channel's note, asked from this one, is not found (and stays as it was).
    elsewhere = {"channel": CHAN, "id": ids["other_note"], "resolve": "dismiss"}
    refused = await ada.post(path, elsewhere, csrf=token)
    assert refused.status_code == 400 and ids["other_note"] in refused.text
    assert [n["id"] for n in (await _decisions(kernel, OTHER))["contradictions"]] == [
        ids["other_note"]
    ]
    done = await ada.post(
        path, {"channel": CHAN, "id": ids["note"], "resolve": "supersede"}, csrf=token
    )
    assert done.status_code == 303, done.text
    listed = await _decisions(kernel)
    status = {d["id"]: (d["status"], d["superseded_by"]) for d in listed["decisions"]}
    assert status[ids["earlier"]] == ("superseded", ids["later"])
    assert status[ids["later"]] == ("active", None) and listed["contradictions"] == []
    again = await ada.post(
        path, {"channel": CHAN, "id": ids["note"], "resolve": "dismiss"}, csrf=token
    )
    assert again.status_code == 400 and "already superseded" in again.text
    dismissed = {"channel": OTHER, "id": ids["other_note"], "resolve": "dismiss"}
    assert (await ada.post(path, dismissed, csrf=token)).status_code == 303
    other = await _decisions(kernel, OTHER)
    assert other["contradictions"] == [] and {d["status"] for d in other["decisions"]} == {"active"}
    audited = await _audited(kernel)
    assert ("knowledge.decision_supersede", "ok") in audited
    assert ("knowledge.decision_dismiss", "ok") in audited


async def test_context_is_shown_and_set(dashboard) -> None:
    kernel, _, ada, token = await _signed_in(dashboard)
    page = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": CHAN})
    assert "No context set for this channel yet" in page.text
    path = f"/g/{ALPHA}/knowledge/context"
    data = {"channel": CHAN, "purpose": EVIL_PURPOSE, "type": "team", "tags": "ops, deploys"}
    saved = await ada.post(path, {**data, "related": f"{OTHER}, #{HIDDEN}"}, csrf=token)
    assert saved.status_code == 303, saved.text
    context = (await _as_admin(kernel, "knowledge.context", CHAN))["context"]
    assert context["purpose"] == EVIL_PURPOSE and context["type"] == "team"
    assert context["tags"] == ["ops", "deploys"] and context["related"] == [OTHER, HIDDEN]
    shown = await ada.client.get(saved.headers["location"])
    assert "Context saved" in shown.text and "Ops &lt;img src=x" in shown.text
    assert EVIL_PURPOSE not in shown.text and "(team)" in shown.text
    assert "#other, #hidden" in shown.text and "ops, deploys" in shown.text
    assert (await ada.post(path, {"channel": CHAN}, csrf=token)).status_code == 303  # nothing
    bad_type = await ada.post(path, {"channel": CHAN, "type": "<b>x</b>"}, csrf=token)
    assert bad_type.status_code == 400 and "Type (type)" in bad_type.text
    too_long = await ada.post(path, {"channel": CHAN, "purpose": "x" * 501}, csrf=token)
    assert too_long.status_code == 400 and "Purpose (purpose)" in too_long.text
    unseen = await ada.post(path, {"channel": CHAN, "related": "4242"}, csrf=token)
    assert unseen.status_code == 400 and "Related channels (related)" in unseen.text
    assert (await _as_admin(kernel, "knowledge.context", CHAN))["context"]["type"] == "team"
    assert ("knowledge.context", "ok") in await _audited(kernel)


EDITS = {
    "action": {"status": "done"},
    "reassign": {"owner": ADMIN},
    "contradiction": {"resolve": "dismiss"},
    "context": {"purpose": "Changed"},
}


async def test_edits_need_the_page_capability_and_the_token(dashboard) -> None:
    kernel, ids, bob, token = await _signed_in(dashboard, MEMBER)
    for route, extra in EDITS.items():
        record = ids["note"] if route == "contradiction" else ids["action"]
        data = {"channel": CHAN, "id": record, **extra}
        refused = await bob.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf=token)
        assert refused.status_code == 403 and "knowledge.manage" in refused.text, route
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    for route, extra in EDITS.items():
        record = ids["note"] if route == "contradiction" else ids["action"]
        data = {"channel": CHAN, "id": record, **extra}
        no_token = await ada.client.post(
            f"/g/{ALPHA}/knowledge/{route}", data=data, headers={"Origin": BASE}
        )
        assert no_token.status_code == 403 and "expired" in no_token.text, route
        wrong = await ada.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf="forged")
        assert wrong.status_code == 403, route
    action = (await _actions(kernel))[ids["action"]]
    assert action["status"] == "open" and action["owner_id"] == MEMBER
    assert [n["id"] for n in (await _decisions(kernel))["contradictions"]] == [ids["note"]]
    assert (await _as_admin(kernel, "knowledge.context", CHAN))["context"] is None
    assert not [a for a, _ in await _audited(kernel, MEMBER) if a.startswith("knowledge.")]


async def test_hidden_channels_other_records_and_garbage_ids(dashboard) -> None:
    kernel, ids, bob, token = await _signed_in(dashboard, MEMBER, grant=True)
    action = f"/g/{ALPHA}/knowledge/action"
    # A channel hidden from bob in Discord: refused, whatever the record.
    for route, extra in EDITS.items():
        data = {"channel": HIDDEN, "id": ids["hidden"], **extra}
        hidden = await bob.post(f"/g/{ALPHA}/knowledge/{route}", data, csrf=token)
        assert hidden.status_code == 404 and "you can see" in hidden.text, route
    assert (await _actions(kernel, HIDDEN))[ids["hidden"]]["status"] == "open"
    # Another channel's action (bob owns it and sees that channel) or another server's,
    # sent from this channel: not found here, named in the error, unchanged.
    for record in (ids["other"], ids["beta"]):
        data = {"channel": CHAN, "id": record, "status": "done"}
        missing = await bob.post(action, data, csrf=token)
        assert missing.status_code == 400 and f"no action {record} here" in missing.text
    assert (await _actions(kernel, OTHER))[ids["other"]]["status"] == "open"
    assert await _beta_action(kernel, ids["beta"]) == "open/1002"
    # The plugin's own rule: an action with no owner is an admin's (or its recorder's).
    unowned = await bob.post(
        action, {"channel": CHAN, "id": ids["unowned"], "status": "done"}, csrf=token
    )
    assert unowned.status_code == 400 and "ask an admin" in unowned.text
    # bob owns this one: he may mark it done himself.
    mine = await bob.post(
        action, {"channel": CHAN, "id": ids["action"], "status": "done"}, csrf=token
    )
    assert mine.status_code == 303 and (await _actions(kernel))[ids["action"]]["status"] == "done"
    assert ("knowledge.action_update", "ok") in await _audited(kernel, MEMBER)
    # Garbage ids: a 400 naming the field, never a 500.
    good = {"channel": CHAN, "id": ids["action"], "status": "done"}
    for field, label, values in (
        (
            "id",
            "Action (id)",
            ("", "x", ids["action"] + "0", ids["action"].upper(), "<b>" * 12, "1" * 5000),
        ),
        ("channel", "Channel (channel)", ("", "abc", "8001 OR 1=1", "٨٠٠١", "9" * 25)),
    ):
        for value in values:
            bad = await bob.post(action, good | {field: value}, csrf=token)
            assert bad.status_code == 400 and label in bad.text, (field, value)
    bad_status = await bob.post(action, good | {"status": "open"}, csrf=token)
    assert bad_status.status_code == 400 and "Status (status)" in bad_status.text
    note = f"/g/{ALPHA}/knowledge/contradiction"
    bad_note = await bob.post(note, {"channel": CHAN, "id": "12", "resolve": "dismiss"}, csrf=token)
    assert bad_note.status_code == 400 and "Contradiction note (id)" in bad_note.text
    reassign = f"/g/{ALPHA}/knowledge/reassign"
    bad_id = await bob.post(reassign, {"channel": CHAN, "id": "nope", "owner": ADMIN}, csrf=token)
    assert bad_id.status_code == 400 and "Action (id)" in bad_id.text


async def test_a_failing_context_read_leaves_the_lists(dashboard, monkeypatch) -> None:
    kernel, ids, ada, _ = await _signed_in(dashboard)

    async def broken(ctx, **args):
        raise ToolError("the context store is unavailable")

    monkeypatch.setitem(kernel.registry.handlers, "knowledge.context", broken)
    page = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": CHAN})
    assert page.status_code == 200
    assert "Could not read what this channel is for" in page.text
    assert "the context store is unavailable" in page.text
    assert "Write the runbook" in page.text and f'value="{ids["note"]}"' in page.text


async def test_names_discord_will_not_give_leave_the_ids(dashboard) -> None:
    """Names only label ids: a lookup Discord refuses (rate limited) shows the id, and the
    page still lists everything; the name is asked again on a later page."""
    *_, ada, _ = await _signed_in(dashboard)
    dashboard.fake.rate_limited.add(MEMBER)
    page = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": CHAN})
    assert page.status_code == 200 and f"<td>Write the runbook</td><td>{MEMBER}</td>" in page.text
    dashboard.fake.rate_limited.clear()
    again = await ada.client.get(f"/g/{ALPHA}/knowledge", params={"channel": CHAN})
    assert "<td>Write the runbook</td><td>bob</td>" in again.text


async def test_name_lookups_go_to_discord_a_few_at_a_time(dashboard) -> None:
    """A page naming many members asks Discord at most 8 at a time (its limit is 50 a
    second) and at most 20 names a page; the rest stay ids."""
    dashboard.fake.member_delay = 0.05
    access = dashboard.app.state.web.access
    names = await access.member_names(ALPHA, [str(9000 + n) for n in range(30)] + [MEMBER])
    assert dashboard.fake.member_lookups == (0, 8)
    assert names == {}  # the first 20 ids are nobody here; bob is the 31st, not asked
    assert await access.member_names(ALPHA, [MEMBER]) == {MEMBER: "bob"}
