"""Mentions through the real LLM path (a wire-level fake OpenAI server) and the scripted model."""

from __future__ import annotations

import json

from discord_world import world

from gigi_core.testing import wire_name
from gigi_core.testing.fake_providers import FakeOpenAI, FakeToolCall
from gigi_core.testing.scripted import say


async def test_mention_answered_through_fake_provider_with_a_tool_call(tmp_path) -> None:
    async with FakeOpenAI(api_key="sk-wire-test") as fake, world(tmp_path, plugins=["openai"]) as w:
        owner = f"guild:{w.gid}"
        await w.kernel.llm.add_credential(
            owner, "openai-compatible", "main", "sk-wire-test", base_url=fake.base_url
        )
        await w.kernel.llm.set_profile(owner, "chat", "main", "fake-model")
        fake.reply_tool_calls(FakeToolCall(wire_name("notes.count"), {}))
        fake.reply_text("You have 3 notes.")

        replies = await w.mention(w.member, "how many notes?")

        assert [m.content for m in replies] == ['You have 3 notes.\n\n`notes.count` → {"count": 3}']
        assert w.notes.ran == ["notes.count"]
        first, second = fake.requests
        assert wire_name("notes.count") in [t["function"]["name"] for t in first.json["tools"]]
        assert first.json["messages"][-1] == {"role": "user", "content": "how many notes?"}
        tool_result = second.json["messages"][-1]
        assert tool_result["role"] == "tool" and json.loads(tool_result["content"]) == {"count": 3}
        # The reply answers the mention in place and pings nobody.
        [reply] = replies
        assert reply.reference is not None and reply.reference.message_id is not None
        posts = [
            r for r in w.env.http_requests if r.method == "POST" and r.path.endswith("/messages")
        ]
        assert posts and all(
            p.json["allowed_mentions"] == {"parse": [], "replied_user": False} for p in posts
        )
        assert any(r.path.endswith("/typing") for r in w.env.http_requests)


async def test_long_answer_is_split_into_valid_messages(tmp_path) -> None:
    paragraph = ("word " * 99).strip()  # 494 characters
    answer = "\n\n".join([paragraph] * 5)  # 2,490 characters
    async with world(tmp_path, [say(answer)]) as w:
        replies = await w.mention(w.member, "write a lot")
    assert len(replies) == 2
    assert all(0 < len(m.content) <= 2000 for m in replies)
    assert "\n\n".join(m.content for m in replies) == answer
    assert all(not m.content.startswith(" ") and not m.content.endswith(" ") for m in replies)


async def test_a_cut_answer_comes_with_the_whole_answer_attached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_REPLY_MAX_CHARS", "2500")
    answer = "\n\n".join([("word " * 99).strip()] * 12)  # 5,988 characters
    async with world(tmp_path, [say(answer)]) as w:
        replies = await w.mention(w.member, "write a novel")
    assert len(replies) == 2 and all(len(m.content) <= 2000 for m in replies)
    assert "answer was cut" in replies[-1].content
    [attached] = replies[-1].attachments
    assert attached.filename == "answer.md"
    assert (await attached.read()).decode() == answer


async def test_provider_failure_is_answered_readably(tmp_path) -> None:
    async with FakeOpenAI(api_key="sk-wire-test") as fake, world(tmp_path, plugins=["openai"]) as w:
        owner = f"guild:{w.gid}"
        await w.kernel.llm.add_credential(
            owner, "openai-compatible", "main", "sk-wire-test", base_url=fake.base_url
        )
        await w.kernel.llm.set_profile(owner, "chat", "main", "fake-model")
        fake.reply_error(400, "This model does not exist: fake-model")
        [reply] = await w.mention(w.member, "hello?")
        # A member gets a short sentence; what the provider said is for admins (privately).
        assert reply.content.startswith("The language model did not answer this time")
        assert "This model does not exist" not in reply.content
        # The bot keeps working afterwards.
        fake.reply_text("Back again.")
        [again] = await w.mention(w.member, "hello?")
        assert again.content == "Back again."
        assert w.env.errors == []


async def test_unconfigured_server_gets_a_setup_hint(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"], enable=False) as w:
        [reply] = await w.mention(w.member, "hi")
    assert "No language model is set up for this server yet" in reply.content
    assert "/llm credential add" in reply.content and "gigi llm" not in reply.content
