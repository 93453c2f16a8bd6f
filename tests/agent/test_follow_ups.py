"""A follow-up (a reply to Gigi's answer) carries the earlier exchange to the model: the
earlier questions and answers, the context items it refers to as unchanged, within the
history budget (oldest turns dropped first, tool results cut before questions and answers),
and only what the asker may still see."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise

import pytest

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing import FakeRetriever, RetrieverPlugin, open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.retrieval import hit
from gigi_core.testing.scripted import ScriptedModel, call, say

MEMBER = Actor(id="u1")
KEY = "sk-follow-up-test-4c1d9e"
FRIDAY = "we agreed to upgrade postgres on friday"
HIDDEN = "the ops channel says the backups moved to sunday"


def notes() -> FakeRetriever:
    return FakeRetriever(
        "notes",
        hits=[hit("notes:n:1", FRIDAY, "c1"), hit("notes:n:2", HIDDEN, "c2")],
    )


def ask(text: str, *, channels: frozenset[str] = frozenset({"c1"}), **kw) -> Request:
    async def visible() -> frozenset[str]:
        return channels

    fields = {"actor": MEMBER, "context": "memory", **kw}
    return Request(
        guild_id="g1",
        channel_id="c1",
        kind="mention",
        text=text,
        visible_channels=visible,
        **fields,
    )


def everything(messages: list) -> str:
    """All the text a request carried, whatever its message shapes."""
    return json.dumps(messages, ensure_ascii=False)


async def test_the_provider_receives_the_earlier_question_answer_and_item(
    database_url, tmp_path
) -> None:
    plugin = RetrieverPlugin(tmp_path, notes())
    async with (
        open_test_kernel(
            tmp_path,
            plugins=["openai"],
            extra_plugins=[("notes", plugin)],
            database_url=database_url,
        ) as kernel,
        FakeOpenAI(api_key=KEY) as fake,
    ):
        await kernel.enable_plugin("g1", "notes")
        await kernel.llm.add_credential(
            "guild:g1", "openai-compatible", "main", KEY, base_url=fake.base_url
        )
        await kernel.llm.set_profile("guild:g1", "chat", "main", "m-1")
        fake.reply_text("The upgrade is on Friday [1].")
        fake.reply_text("Yes: Friday, as [1] says.")
        runtime = AgentRuntime(kernel)
        first = await runtime.handle(ask("when is the postgres upgrade?"))
        assert first.status == "done", first.text
        second = await runtime.handle(ask("are we sure about that?", follows_run=first.run_id))
        assert second.status == "done", second.text

        earlier, latest = fake.requests_to("chat")
        messages = latest.json["messages"]
        roles = [m["role"] for m in messages]
        assert roles == ["system", "user", "assistant", "user"]
        history = everything(messages[1:3])
        assert "when is the postgres upgrade?" in history
        assert "The upgrade is on Friday [1]." in messages[2]["content"]
        assert f"[1] #c1 · undated — {FRIDAY}" in history  # item [1], as the model saw it
        turn = messages[-1]["content"]
        assert "unchanged: [1]" in turn and FRIDAY not in turn  # sent once, not twice
        assert turn.endswith("## User's Question\nare we sure about that?")
        assert len(earlier.json["messages"]) == 2  # a first question carries no history

        # At rest the exchange is sealed: neither the question nor the answer is readable.
        from gigi_core.store.agent_tables import AgentRunContext

        async with kernel.db.session() as s:
            rows = [await s.get(AgentRunContext, r.run_id) for r in (first, second)]
        stored = " ".join(f"{r.state_json} {r.trace_json}" for r in rows if r is not None)
        assert "postgres upgrade" not in stored and "Friday" not in stored


@pytest.fixture
async def notes_env(database_url, tmp_path):
    retriever = notes()
    plugin = RetrieverPlugin(tmp_path, retriever)
    async with open_test_kernel(
        tmp_path, extra_plugins=[("notes", plugin)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "notes")
        yield kernel, retriever


async def test_an_item_the_asker_can_no_longer_read_is_not_sent_again(notes_env) -> None:
    kernel, _ = notes_env
    model = ScriptedModel([say("Friday [1]; backups on Sunday [2]."), say("Still Friday.")])
    runtime = AgentRuntime(kernel, model=model)
    both = frozenset({"c1", "c2"})
    first = await runtime.handle(ask("when are the upgrade and the backups?", channels=both))
    assert HIDDEN in model.requests[0].messages[-1].content  # c2 was readable then
    await runtime.handle(ask("and after that?", follows_run=first.run_id))  # c1 only now
    sent = everything([m.model_dump(mode="json") for m in model.requests[1].messages])
    assert HIDDEN not in sent  # neither in the history nor in the new turn
    assert FRIDAY in sent and "when are the upgrade and the backups?" in sent
    assert "withdrawn: [2]" in model.requests[1].messages[-1].content


async def test_a_deleted_item_is_not_sent_again(notes_env) -> None:
    kernel, retriever = notes_env
    model = ScriptedModel([say("Friday [1]."), say("ok")])
    runtime = AgentRuntime(kernel, model=model)
    first = await runtime.handle(ask("when is the postgres upgrade?"))
    retriever.delete("notes:n:1")
    await runtime.handle(ask("sure?", follows_run=first.run_id))
    sent = everything([m.model_dump(mode="json") for m in model.requests[1].messages])
    assert FRIDAY not in sent and "Friday [1]." in sent  # the answer stays, the item does not
    assert "withdrawn: [1]" in model.requests[1].messages[-1].content


async def test_another_member_gets_the_exchange_but_not_the_askers_tool_results(env) -> None:
    kernel, _, runtime = env
    rt, model = runtime(
        call(("box__echo", {"text": "SECRET-RESULT"})), say("Echoed it."), say("It was an echo.")
    )
    first = await rt.handle(ask("echo something", context=None))
    other = replace(ask("what did it echo?", context=None), actor=Actor(id="u2"))
    await rt.handle(replace(other, follows_run=first.run_id))
    sent = everything([m.model_dump(mode="json") for m in model.requests[2].messages])
    assert "echo something" in sent and "Echoed it." in sent  # posted in the channel
    assert "SECRET-RESULT" not in sent  # the asker's tool results stay the asker's


async def test_the_same_member_gets_the_tool_results_of_the_earlier_answer(env) -> None:
    kernel, _, runtime = env
    rt, model = runtime(
        call(("box__echo", {"text": "RESULT-7"})), say("Echoed it."), say("It was RESULT-7.")
    )
    first = await rt.handle(ask("echo something", context=None))
    await rt.handle(ask("what did it echo?", context=None, follows_run=first.run_id))
    messages = model.requests[2].messages
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert "RESULT-7" in messages[2].content and "box.echo" in messages[2].content
    assert messages[2].content.rstrip().endswith("Echoed it.")


async def test_a_long_history_is_cut_oldest_first_with_a_marker(env) -> None:
    kernel, _, runtime = env
    turns = 6
    rt, model = runtime(*[say(f"answer number {n} " + "x" * 300) for n in range(turns)])
    rt = AgentRuntime(kernel, model=model, history_tokens=600)
    previous = None
    for n in range(turns):
        text = f"question number {n} " + "y" * 300
        reply = await rt.handle(ask(text, context=None, follows_run=previous))
        previous = reply.run_id
    last = model.requests[-1].messages
    sent = everything([m.model_dump(mode="json") for m in last[1:-1]])
    assert "question number 4" in sent and "answer number 4" in sent  # the newest is kept
    assert "question number 0" not in sent and "answer number 0" not in sent
    assert "left out" in last[1].content  # the model is told that earlier turns are missing
    roles = [m.role for m in last]
    assert roles[0] == "system" and roles[-1] == "user"
    assert all(a != b for a, b in pairwise(roles[1:]))  # they alternate
    from gigi_core.context.tokens import count_tokens

    assert count_tokens(sent) <= 600 + 100  # within the budget (JSON quoting aside)


async def test_tool_results_are_cut_before_questions_and_answers(env) -> None:
    kernel, _, runtime = env
    rt, model = runtime(
        call(("box__echo", {"text": "R", "n": 4000})), say("ANSWER-KEPT"), say("ok")
    )
    rt = AgentRuntime(kernel, model=model, history_tokens=400)
    first = await rt.handle(ask("QUESTION-KEPT please echo", context=None))
    await rt.handle(ask("and?", context=None, follows_run=first.run_id))
    history = model.requests[2].messages[1:-1]
    sent = everything([m.model_dump(mode="json") for m in history])
    assert "QUESTION-KEPT" in sent and "ANSWER-KEPT" in sent
    assert "R" * 4000 not in sent  # the tool result went first


async def test_a_run_answered_after_a_confirmation_is_followed_up_too(env) -> None:
    kernel, toolbox, runtime = env
    rt, model = runtime(call(("box__write", {})), say("WROTE-IT"), say("ok"))
    paused = await rt.handle(ask("please write it", context=None))
    assert paused.status == "awaiting_confirmation"
    done = await rt.confirm(paused.run_id, MEMBER)
    assert done.status == "done" and toolbox.ran == ["box.write"]
    await rt.handle(ask("did it work?", context=None, follows_run=paused.run_id))
    sent = everything([m.model_dump(mode="json") for m in model.requests[2].messages[1:-1]])
    assert "please write it" in sent and "WROTE-IT" in sent  # kept across the pause


async def test_a_follow_up_in_another_channel_or_guild_starts_afresh(env) -> None:
    kernel, _, runtime = env
    rt, model = runtime(say("FIRST-ANSWER"), say("ok"), say("ok"))
    first = await rt.handle(ask("first question", context=None))
    elsewhere = replace(ask("next", context=None, follows_run=first.run_id), channel_id="c2")
    await rt.handle(elsewhere)
    other_guild = replace(ask("next", context=None, follows_run=first.run_id), guild_id="g2")
    await rt.handle(other_guild)
    for n in (1, 2):
        assert [m.role for m in model.requests[n].messages] == ["system", "user"]


async def test_deleting_a_members_data_removes_their_turns_from_later_follow_ups(env) -> None:
    from gigi_core.privacy.kernel_data import delete_kernel

    kernel, _, runtime = env
    rt, model = runtime(say("ANSWER-TO-A"), say("ANSWER-TO-B"), say("ok"))
    first = await rt.handle(ask("QUESTION-OF-A", context=None))
    member_b = Actor(id="u2")
    second = await rt.handle(
        replace(ask("QUESTION-OF-B", context=None, follows_run=first.run_id), actor=member_b)
    )
    await kernel.db.writer.drain()
    await delete_kernel(kernel.db, MEMBER.id, "g1", "anon:u1")
    await rt.handle(
        replace(ask("and now?", context=None, follows_run=second.run_id), actor=member_b)
    )
    sent = everything([m.model_dump(mode="json") for m in model.requests[2].messages])
    assert "QUESTION-OF-B" in sent and "ANSWER-TO-B" in sent
    assert "QUESTION-OF-A" not in sent and "ANSWER-TO-A" not in sent
