"""Answers from knowledge (seed 004 §11): an agent run gets the knowledge in §11's order with
the plugin's answer notes (cite channel and approximate date, never quote) and the question
last; a knowledge question with nothing recorded is answered "no record" by code, without a
model call; the plugin's own texts keep the manner (``phrasing``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gigi_knowledge import phrasing
from gigi_knowledge.followup.proactive import contradiction_text, nudge_text
from knowledge_fakes import action, classify, decision, entity, extraction, relation, signal
from knowledge_helpers import ALICE, enable, message, publish

from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing.scripted import ScriptedModel, say

DAY = 86_400_000


def _focus(request: Any) -> str:
    return request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]


def ask(text: str, context: str | None = None) -> Request:
    async def visible() -> frozenset[str]:
        return frozenset({"c1"})

    return Request(
        actor=ALICE,
        guild_id="g1",
        channel_id="c1",
        kind="mention",
        text=text,
        visible_channels=visible,
        context=context,
    )


async def _seed(kernel: Any, model: Any) -> None:
    await enable(kernel, "c1")
    model.always("classify", classify())
    model.always("contradiction", {"contradicts": False})

    def reply(request: Any) -> Any:
        mid = _focus(request)
        return extraction(
            decisions=[decision("Postgres upgrade happens on Friday", [mid], by=["u1"])],
            actions=[action("Upgrade staging postgres", [mid], owner="u1")],
            signals=[signal("Postgres upgrade risk was discussed", [mid])],
            entities=[entity("Postgres", [mid], type="tool"), entity("Billing", [mid])],
            relationships=[relation("Billing", "Postgres", [mid])],
        )

    model.on("extract", reply)
    await publish(kernel, message("talk about the upgrade", author_id="u1"))


async def test_an_answer_gets_knowledge_in_seed_004_order(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    agent = ScriptedModel([say("On Friday, as recorded in #c1 yesterday.")])
    runtime = AgentRuntime(kernel, model=agent)
    reply = await runtime.handle(ask("what did we decide about the postgres upgrade?"))
    assert reply.text.startswith("On Friday")
    turn = agent.requests[0].messages[-1].content
    headings = [ln for ln in turn.splitlines() if ln.startswith("## ")]
    assert headings == [
        "## Relevant Decisions",
        "## Relevant Actions",
        "## Related Context",
        "## User's Question",
    ]
    assert f"Answering from knowledge: {phrasing.ANSWER_NOTES}" in turn
    assert turn.endswith("## User's Question\nwhat did we decide about the postgres upgrade?")
    lines = turn.splitlines()
    dec = lines[lines.index("## Relevant Decisions") + 1]
    assert "<#c1> · " in dec and "Postgres upgrade happens on Friday" in dec
    assert "Decided by <@u1> on " in dec and "from 1 message(s)." in dec  # §11's fields
    act = lines[lines.index("## Relevant Actions") + 1]
    assert "Upgrade staging postgres" in act and "owner <@u1>" in act and "(open)" in act
    related = turn.split("## Related Context", 1)[1].split("## User's Question", 1)[0]
    assert "Postgres upgrade risk" in related or "depends on" in related
    assert phrasing.ANSWER_NOTES not in agent.requests[0].messages[0].content  # not the system
    assert any(u.startswith("https://discord.com/channels/g1/c1/") for u in reply.sources.values())


async def test_no_record_is_said_plainly_without_the_model(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    agent = ScriptedModel([say("Perhaps it was the logo!")])
    runtime = AgentRuntime(kernel, model=agent)
    reply = await runtime.handle(ask("what did we decide about the logo colours?"))
    assert reply.text == "I'm afraid I have no record of that particular matter."
    assert reply.termination_reason == "no_record" and agent.requests == []
    trace = await runtime.trace(reply.run_id)
    assert trace["context"]["answer"] == {"reason": "no_record", "path": "knowledge"}
    # Asked in the knowledge mode, any question with nothing found is "no record".
    again = await runtime.handle(ask("the logo colours?", context="knowledge"))
    assert again.text == phrasing.NO_RECORD and agent.requests == []


def test_the_plugins_own_texts_keep_the_manner() -> None:
    now = 1_780_000_000_000
    for text in (phrasing.NO_RECORD, phrasing.NOTHING_SINCE, phrasing.ANSWER_NOTES):
        assert phrasing.lapses(text) == [], text
    row = SimpleNamespace(
        owner_id="u1",
        owner_name=None,
        description="Ship the API review!!",  # model text
        deadline_ms=now - 4 * DAY,
        staleness_ms=None,
    )
    nudge = nudge_text(row, now)
    assert phrasing.lapses(nudge) == []
    assert nudge.startswith("If I may, <@u1> undertook to ship the API review by ")
    assert "That was 4 days ago" in nudge and "Shall I mark it as still in progress" in nudge
    unowned = nudge_text(
        SimpleNamespace(**{**vars(row), "owner_id": None, "owner_name": "Tom!"}), now
    )
    assert "If I may, Tom. undertook" not in unowned and "Tom undertook" in unowned
    note = contradiction_text("Move to MySQL!", "Stay on Postgres", now - 10 * DAY, now)
    assert phrasing.lapses(note) == []
    assert note.startswith("One notes that a decision recorded here (move to MySQL)")
    assert "appears to differ from an earlier one of around " in note and "Shall I" in note
    assert phrasing.lapses("Sorry! Do you want me to?") == [
        "exclamation mark",
        "sorry",
        "do you want me to",
    ]
    assert phrasing.calm("Done! Great!!") == "Done. Great."
    assert phrasing.approximately(now - DAY, now) == "yesterday"
