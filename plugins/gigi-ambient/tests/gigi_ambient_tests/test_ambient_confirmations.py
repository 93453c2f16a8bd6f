"""Nobody is there to confirm a persona's call: the persona is offered only actions that run
without a confirmation, and a run that still pauses (a plugin's policy asked) is cancelled
at once, never retried, so no pending confirmation keeps other members' messages sealed."""

from __future__ import annotations

from sqlalchemy import select

from gigi_ambient_tests.ambient_helpers import GUILD, envelope, open_world
from gigi_ambient_tests.ambient_notes_plugin import Notes
from gigi_core.store.agent_tables import AgentRun, AgentRunConfirmation
from gigi_core.testing.fake_providers import FakeToolCall


async def runs(kernel) -> list[tuple[str, str | None, bool]]:
    """Every run: status, termination reason, whether sealed state is kept."""
    await kernel.db.writer.drain()
    async with kernel.db.session() as s:
        rows = await s.execute(
            select(AgentRun.status, AgentRun.termination_reason, AgentRun.state_sealed)
        )
        return [(status, reason, sealed is not None) for status, reason, sealed in rows]


async def pending(kernel) -> int:
    async with kernel.db.session() as s:
        states = await s.scalars(select(AgentRunConfirmation.state))
        return sum(1 for state in states if state == "pending")


def offered(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


async def test_the_persona_is_offered_only_actions_that_need_no_confirmation(
    tmp_path, database_url
) -> None:
    notes = Notes(tmp_path)
    async with open_world(tmp_path, database_url, extra=[("notes", notes)]) as w:
        await w.kernel.enable_plugin(GUILD, "notes")
        # the model names the confirm-required action anyway (three times over)
        for _ in range(3):
            w.fake.reply_tool_calls(FakeToolCall("notes__add", {}))
        w.fake.reply_text(envelope(answer="Noted in my head.", answer_needed=True))
        await w.say("please note that the raid is at nine")
        first = w.chat_bodies()[0]
        assert "notes__tag" in offered(first) and "notes__add" not in offered(first)
        assert notes.ran == []
        assert w.answers() == ["Noted in my head."]  # one run: the unknown tool went back
        assert await runs(w.kernel) == [("done", "completed", False)]
        assert await pending(w.kernel) == 0
        assert (await w.svc.today(GUILD))["failures"] == 0


async def test_a_run_a_plugin_policy_pauses_is_cancelled_at_once_and_not_retried(
    tmp_path, database_url
) -> None:
    notes = Notes(tmp_path)
    notes.confirm_tags = True
    async with open_world(tmp_path, database_url, extra=[("notes", notes)]) as w:
        await w.kernel.enable_plugin(GUILD, "notes")
        for _ in range(3):
            w.fake.reply_tool_calls(FakeToolCall("notes__tag", {}))
        await w.say("tag this one")
        assert len(w.chat_bodies()) == 1  # no second attempt
        assert w.sleeps.waits == []
        assert notes.ran == [] and w.answers() == []
        assert await runs(w.kernel) == [("cancelled", "cancelled", False)]
        assert await pending(w.kernel) == 0
        assert (await w.svc.today(GUILD))["failures"] == 1
