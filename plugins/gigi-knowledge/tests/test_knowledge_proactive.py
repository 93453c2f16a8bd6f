"""Step 4: staleness nudges and contradiction notes through the outbox, their buttons
pressed as members (the command's own checks apply), and the contradiction check."""

from __future__ import annotations

import json
from typing import Any

import gigi_knowledge
import pytest
import sqlalchemy as sa
from knowledge_fakes import action, classify, decision, extraction
from knowledge_helpers import ADMIN, ALICE, BOB, call, enable, message, publish, rows

from gigi_core import Actor, ToolError
from gigi_core.testing import RecordingPoster

DAY = 86_400_000


def _reply(**items: Any) -> Any:
    def build(request: Any) -> Any:
        mid = request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]
        return extraction(
            **{k: [v | {"message_ids": [mid]} for v in vs] for k, vs in items.items()}
        )

    return build


async def _age(kernel: Any, table: str, column: str, ms: int) -> None:
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.text(f"UPDATE {table} SET {column} = {column} - :ms"), {"ms": ms})


async def _run(kernel: Any, name: str, **payload: Any) -> Any:
    """Run a registered job's handler now (the job service runs the same handler)."""
    from knowledge_helpers import JobCtx

    return await kernel.registry.jobs[name].fn(JobCtx(kernel), **payload)


async def test_the_jobs_run_through_the_job_service(kernel: Any) -> None:
    await enable(kernel)
    for name in ("knowledge.staleness", "knowledge.contradictions", "knowledge.summaries"):
        job = await kernel.jobs.defer(name, {})
        await kernel.jobs.run_until_idle()
        info = await kernel.jobs.get(job)
        assert info.status == "done", (name, info.status, info.error_class)


async def test_a_stale_action_gets_one_nudge_with_working_buttons(kernel: Any, model: Any) -> None:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract", _reply(actions=[action("Review the API", [], owner="u1", deadline="2020-01-03")])
    )
    await publish(kernel, message("Tom reviews the API by Friday", author_id="u1"))
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 1
    (post,) = poster.posts
    assert post.channel_id == "c1" and "?" in post.text and "<@u1>" in post.text
    assert [b.label for b in post.buttons] == ["Done", "Still in progress", "Cancelled"]
    assert all(set(b.arguments) <= {"id", "status"} for b in post.buttons)  # ids, never text
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 0  # one nudge
    # Bob (not the owner, not an admin) cannot close Alice's action with her button.
    with pytest.raises(ToolError, match="owner"):
        await poster.press(kernel, 0, 0, BOB)
    assert (await rows(kernel, "knowledge_actions"))[0].status == "open"
    await poster.press(kernel, 0, 0, ALICE)
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.status == "done" and a.last_status_check_ms is not None


async def test_still_in_progress_rearms_later(kernel: Any, model: Any) -> None:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(actions=[action("Ship the report", [], owner="u1", deadline="2020-01-03")]),
    )
    await publish(kernel, message("report", author_id="u1"))
    await _run(kernel, "knowledge.staleness")
    await poster.press(kernel, 0, 1, ALICE)
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.status == "open" and a.nudged_ms is None
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 0  # checked < 24 h ago
    await _age(kernel, "knowledge_actions", "last_status_check_ms", 2 * DAY)
    await _age(kernel, "knowledge_actions", "staleness_ms", 30 * DAY)
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 1


async def test_a_contradiction_is_noted_once_after_thirty_minutes(kernel: Any, model: Any) -> None:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(decisions=[decision("Deploys happen on friday afternoons", [])]),
        # Alice (in the window) is named in the later one too: a party to both.
        _reply(decisions=[decision("Deploys never happen on friday afternoons", [], by=["u1"])]),
    )
    model.on("contradiction", {"contradicts": True})
    await publish(kernel, message("first", author_id="u1"), message("second", author_id="u2"))
    assert len(model.calls("contradiction")) == 1  # similar enough to ask
    (note,) = await rows(kernel, "knowledge_contradictions")
    assert note.status == "open"
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 0  # both too recent
    await _age(kernel, "knowledge_decisions", "created_ms", 31 * 60_000)
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 1
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 0  # one note
    (post,) = poster.posts
    assert post.text.startswith("One notes that")
    assert [b.command for b in post.buttons] == [
        "knowledge decision supersede",
        "knowledge decision dismiss",
    ]
    await poster.press(kernel, 0, 0, ALICE)
    states = {
        d.summary: (d.status, d.superseded_by) for d in await rows(kernel, "knowledge_decisions")
    }
    later = next(
        d.id
        for d in await rows(kernel, "knowledge_decisions")
        if d.summary.startswith("Deploys never")
    )
    assert states["Deploys happen on friday afternoons"] == ("superseded", later)
    assert states["Deploys never happen on friday afternoons"][0] == "active"


async def test_dissimilar_decisions_are_not_asked_and_a_no_records_nothing(
    kernel: Any, model: Any
) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(decisions=[decision("Deploys happen on friday afternoons", [])]),
        _reply(decisions=[decision("The logo becomes green", [])]),
        _reply(decisions=[decision("Deploys happen on friday mornings", [])]),
    )
    model.on("contradiction", {"contradicts": False})
    for t in ("a", "b", "c"):
        await publish(kernel, message(t))
    assert len(model.calls("contradiction")) == 1  # only the similar pair
    assert await rows(kernel, "knowledge_contradictions") == []


async def test_reassign_by_command(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on("extract", _reply(actions=[action("Write the doc", [], owner="u1")]))
    await publish(kernel, message("doc", author_id="u1"))
    (a,) = await rows(kernel, "knowledge_actions")
    out = await call(kernel, "action_reassign", actor=ALICE, id=a.id, owner="u2")
    assert out["action"]["owner_id"] == "u2"
    with pytest.raises(ToolError, match="no record"):  # from a channel where it is not
        await call(kernel, "action_update", actor=ADMIN, channel_id="c9", id=a.id, status="done")


async def _posted_note(kernel: Any, model: Any) -> RecordingPoster:
    """A contradiction note posted: Alice's earlier decision, Bob's later one."""
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(decisions=[decision("Deploys happen on friday afternoons", [])]),
        _reply(decisions=[decision("Deploys never happen on friday afternoons", [])]),
    )
    model.on("contradiction", {"contradicts": True})
    await publish(kernel, message("first", author_id="u1"), message("second", author_id="u2"))
    await _age(kernel, "knowledge_decisions", "created_ms", 31 * 60_000)
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 1
    return poster


async def test_who_may_supersede_or_dismiss_a_note(kernel: Any, model: Any) -> None:
    """Supersede: who made the earlier decision (the one replaced) or an admin — Bob, who
    recorded the contrary one, cannot overturn Alice's. Dismiss: a party to either."""
    poster = await _posted_note(kernel, model)
    for who in (BOB, Actor(id="u3")):  # the later decision's party, and nobody's
        with pytest.raises(ToolError, match="earlier decision"):
            await poster.press(kernel, 0, 0, who)
    with pytest.raises(ToolError, match="one of the two decisions"):
        await poster.press(kernel, 0, 1, Actor(id="u3"))
    assert {d.status for d in await rows(kernel, "knowledge_decisions")} == {"active"}
    (note,) = await rows(kernel, "knowledge_contradictions")
    assert note.status == "posted"
    # The channel's decisions list the note still to settle (the dashboard offers it).
    (listed,) = (await call(kernel, "decisions", status="all"))["contradictions"]
    assert listed["id"] == note.id and listed["status"] == "posted"
    assert listed["earlier"]["summary"] == "Deploys happen on friday afternoons"
    assert (await call(kernel, "decisions", channel_id="c9"))["contradictions"] == []
    await poster.press(kernel, 0, 0, ALICE)  # her own earlier decision: she may
    assert (await call(kernel, "decisions"))["contradictions"] == []  # settled
    by_summary = {d.summary: d.status for d in await rows(kernel, "knowledge_decisions")}
    assert by_summary == {
        "Deploys happen on friday afternoons": "superseded",
        "Deploys never happen on friday afternoons": "active",
    }


async def test_taking_part_in_a_decision_is_not_making_it(kernel: Any, model: Any) -> None:
    """Alice writes that Carol decided (asserted_by Alice, decided_by Carol): Alice may
    dismiss the note, not supersede the decision; Carol may."""
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel)
    model.always("classify", classify())
    says = message("carol decided: fridays", author_id="u1", mentioned_user_ids=("u3",))
    model.on(
        "extract",
        _reply(decisions=[decision("Deploys happen on friday afternoons", [], ["u3"])]),
        _reply(decisions=[decision("Deploys never happen on friday afternoons", [])]),
    )
    model.on("contradiction", {"contradicts": True})
    await publish(kernel, says, message("second", author_id="u2"))
    first = next(d for d in await rows(kernel, "knowledge_decisions") if "never" not in d.summary)

    def ids(value: Any) -> list[str]:  # a JSON column: text on SQLite
        return sorted(json.loads(value) if isinstance(value, str) else value)

    assert (ids(first.decided_by), ids(first.asserted_by)) == (["u3"], ["u1"])
    await _age(kernel, "knowledge_decisions", "created_ms", 31 * 60_000)
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 1
    with pytest.raises(ToolError, match="made the earlier decision"):
        await poster.press(kernel, 0, 0, ALICE)
    await poster.press(kernel, 0, 0, Actor(id="u3"))
    statuses = {d.summary: d.status for d in await rows(kernel, "knowledge_decisions")}
    assert statuses["Deploys happen on friday afternoons"] == "superseded"


async def test_a_party_to_the_later_decision_may_dismiss(kernel: Any, model: Any) -> None:
    poster = await _posted_note(kernel, model)
    await poster.press(kernel, 0, 1, BOB)  # a party to the later one: dismissing is his too
    (note,) = await rows(kernel, "knowledge_contradictions")
    assert note.status == "dismissed"
    assert {d.status for d in await rows(kernel, "knowledge_decisions")} == {"active"}
    with pytest.raises(ToolError, match="already dismissed"):
        await poster.press(kernel, 0, 0, ADMIN)


async def test_an_admin_supersedes_for_anyone(kernel: Any, model: Any) -> None:
    poster = await _posted_note(kernel, model)
    await poster.press(kernel, 0, 0, ADMIN)
    statuses = sorted(d.status for d in await rows(kernel, "knowledge_decisions"))
    assert statuses == ["active", "superseded"]


async def test_an_action_with_no_owner_is_changed_only_by_an_admin(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on("extract", _reply(actions=[action("Tidy the wiki", [], owner="u1")]))
    await publish(kernel, message("wiki", author_id="u1"))
    await gigi_knowledge.delete_user_data("u1", "g1", kernel)  # now "a former member"'s
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.owner_id is None
    with pytest.raises(ToolError, match="no owner"):
        await call(kernel, "action_update", actor=BOB, id=a.id, status="cancelled")
    with pytest.raises(ToolError, match="no owner"):
        await call(kernel, "action_reassign", actor=BOB, id=a.id, owner="u2")
    assert (await rows(kernel, "knowledge_actions"))[0].status == "open"
    out = await call(kernel, "action_update", actor=ADMIN, id=a.id, status="cancelled")
    assert out["action"]["status"] == "cancelled"


@pytest.mark.parametrize("state", ["paused", "secure"])
async def test_no_nudge_in_a_paused_or_secure_channel(kernel: Any, model: Any, state: str) -> None:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract", _reply(actions=[action("Review the API", [], owner="u1", deadline="2020-01-03")])
    )
    await publish(kernel, message("Tom reviews the API by Friday", author_id="u1"))
    await kernel.channels.set("g1", "c1", state, by="admin")
    out = await _run(kernel, "knowledge.staleness")
    assert out == {"nudged": 0, "skipped": 1, "checked": 0} and poster.posts == []
    await kernel.channels.set("g1", "c1", "active", by="admin")
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 1  # once resumed


@pytest.mark.parametrize("state", ["paused", "secure"])
async def test_no_contradiction_note_in_a_paused_or_secure_channel(
    kernel: Any, model: Any, state: str
) -> None:
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(decisions=[decision("Deploys happen on friday afternoons", [])]),
        _reply(decisions=[decision("Deploys never happen on friday afternoons", [])]),
    )
    model.on("contradiction", {"contradicts": True})
    await publish(kernel, message("first", author_id="u1"), message("second", author_id="u2"))
    await _age(kernel, "knowledge_decisions", "created_ms", 31 * 60_000)
    await kernel.channels.set("g1", "c1", state, by="admin")
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 0
    assert (
        poster.posts == [] and (await rows(kernel, "knowledge_contradictions"))[0].status == "open"
    )
    await kernel.channels.set("g1", "c1", "active", by="admin")
    assert (await _run(kernel, "knowledge.contradictions"))["posted"] == 1


async def test_actions_waiting_in_a_paused_channel_do_not_hold_up_the_others(
    kernel: Any, model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gigi_knowledge.followup import proactive

    monkeypatch.setattr(proactive, "BATCH", 1)
    poster = RecordingPoster()
    kernel.outbox.register("test", poster)
    await enable(kernel, "c1")
    await enable(kernel, "c2")
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(actions=[action("Renew the cert", [], owner="u1", deadline="2020-01-01")]),
        _reply(actions=[action("Review the API", [], owner="u1", deadline="2020-01-05")]),
    )
    await publish(kernel, message("cert", channel_id="c2", author_id="u1"))
    await publish(kernel, message("api", channel_id="c1", author_id="u1"))
    await kernel.channels.set("g1", "c2", "paused", by="admin")  # its action is due first
    assert (await _run(kernel, "knowledge.staleness"))["nudged"] == 1
    assert [p.channel_id for p in poster.posts] == ["c1"]
