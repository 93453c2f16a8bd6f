"""ENV-16, ENV-17, ENV-21, ENV-22, ENV-23: what reaches the wire on both OpenAI paths, tools
in a worker thread, and no response cache anywhere."""

from __future__ import annotations

import asyncio
import threading

from gigi_ambient_tests.ambient_helpers import GUILD, envelope, open_world
from gigi_ambient_tests.ambient_lookup_plugin import Lookup
from gigi_core.testing.fake_providers import FakeToolCall
from gigi_core.testing.fake_providers.openai import responses_body

TOOL = FakeToolCall("lookup__game", {"title": "Grim Fandango"})


async def lookup_world(tmp_path, *, seconds: float = 0.0, config=None):
    lookup = Lookup(tmp_path, seconds)
    ctx = open_world(tmp_path, None, extra=[("lookup", lookup)], config=config)
    return lookup, ctx


async def test_env_21_tool_calls_disable_reasoning_effort(tmp_path) -> None:
    lookup, ctx = await lookup_world(tmp_path)
    async with ctx as w:
        await w.kernel.configure_plugin(GUILD, "ambient", {"tool_rounds": 0})
        w.fake.reply_text(envelope(answer=None))
        await w.say("no tools now")  # tool_rounds 0: a tool-less call
        await w.kernel.configure_plugin(GUILD, "ambient", {})
        await w.kernel.enable_plugin(GUILD, "lookup")
        w.fake.reply_tool_calls(TOOL)
        w.fake.reply_text(envelope(answer="It came out in 1998.", answer_needed=True))
        await w.say("when did Grim Fandango come out?")
        toolless, first, follow_up = w.chat_bodies()
        assert "tools" not in toolless and "reasoning_effort" not in toolless
        assert first["tools"] and first["reasoning_effort"] == "none"
        assert follow_up["reasoning_effort"] == "none"
        assert follow_up["response_format"] == first["response_format"]  # ENV-19 on follow-ups
        assert w.answers()[-1] == "It came out in 1998."
        # the profile's own setting wins over the default
        await w.kernel.llm.set_profile(
            f"guild:{GUILD}", "chat", "main", "gpt-main", params={"reasoning_effort": "low"}
        )
        w.fake.reply_tool_calls(TOOL)
        w.fake.reply_text(envelope(answer=None))
        await w.say("and again?")
        assert w.chat_bodies()[-2]["reasoning_effort"] == "low"


async def test_env_22_responses_api_path_behind_a_flag(tmp_path) -> None:
    lookup, ctx = await lookup_world(tmp_path)
    async with ctx as w:
        await w.kernel.enable_plugin(GUILD, "lookup")
        await w.kernel.llm.set_profile(
            f"guild:{GUILD}", "chat", "main", "gpt-main", fallback_model="gpt-retry",
            params={"provider_options": {"api": "responses"}, "reasoning_effort": "medium"},
        )  # fmt: skip
        w.fake.reply_response(text=envelope(answer="Hello.", answer_needed=True))
        await w.say("hello")
        assert w.fake.requests_to("chat") == [] and w.answers() == ["Hello."]
        body = w.fake.requests_to("responses")[0].json
        assert body["model"] == "gpt-main"
        fmt = body["text"]["format"]
        assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "envelope", True)
        [tool] = [t for t in body["tools"] if t["name"] == "lookup__game"]
        assert tool["type"] == "function" and tool["parameters"]["required"] == ["title"]
        assert "function" not in tool  # the flat Responses shape
        assert body["reasoning"] == {"effort": "medium"}  # tools + reasoning allowed here


async def test_env_23_responses_tool_loop_is_stateless_and_keeps_reasoning(tmp_path) -> None:
    lookup, ctx = await lookup_world(tmp_path, config={"tool_rounds": 2})
    async with ctx as w:
        await w.kernel.enable_plugin(GUILD, "lookup")
        await w.kernel.llm.set_profile(
            f"guild:{GUILD}", "chat", "main", "gpt-main",
            params={"provider_options": {"api": "responses"}},
        )  # fmt: skip
        for n in range(2):  # two rounds that call the tool, each with its reasoning
            body = responses_body(tool_calls=[TOOL], reasoning_summary=[f"step {n}"])
            body["output"][0].update(id=f"rs_{n}", encrypted_content=f"ENC{n}", status="completed")
            body["output"][1].update(status="completed", call_id=f"call_{n}")
            w.fake.reply_raw(200, json=body, route="responses")
        w.fake.reply_response(text=envelope(answer="1998.", answer_needed=True))
        await w.say("when did Grim Fandango come out?")
        first, second, final = (r.json for r in w.fake.requests_to("responses"))
        for body in (first, second, final):
            assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        items = final["input"]
        reasoning = [i for i in items if i.get("type") == "reasoning"]
        assert reasoning == [
            {"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": f"step {n}"}],
             "encrypted_content": f"ENC{n}"}
            for n in range(2)
        ]  # fmt: skip
        calls = [i for i in items if i.get("type") == "function_call"]
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        assert (
            [c["call_id"] for c in calls] == [o["call_id"] for o in outputs] == ["call_0", "call_1"]
        )
        assert all(set(c) == {"type", "call_id", "name", "arguments"} for c in calls)
        assert "tools" in first and "tools" in second and "tools" not in final  # rounds exhausted
        assert w.answers() == ["1998."]


async def test_env_16_model_calls_are_never_served_from_a_cache(tmp_path) -> None:
    async with open_world(tmp_path, None) as w:
        for _ in range(2):
            w.fake.reply_text(envelope(answer="Same answer.", answer_needed=True))
            await w.say("the very same question")
        assert len(w.fake.requests_to("chat")) == 2  # the client is called every time
        assert w.answers() == ["Same answer.", "Same answer."]
        written = [p.name for p in tmp_path.rglob("*") if p.suffix in (".dat", ".pickle", ".pkl")]
        assert written == []


async def test_env_17_blocking_tool_execution_runs_in_a_worker_thread(tmp_path) -> None:
    lookup, ctx = await lookup_world(tmp_path, seconds=0.3)
    async with ctx as w:
        await w.kernel.enable_plugin(GUILD, "lookup")
        w.fake.reply_tool_calls(TOOL)
        w.fake.reply_text(envelope(answer="1998.", answer_needed=True))
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        task = asyncio.get_running_loop().create_task(ticker())
        try:
            await w.say("when did Grim Fandango come out?")
        finally:
            task.cancel()
        assert lookup.threads and lookup.threads[0] != threading.main_thread().name
        assert ticks >= 5  # the loop kept serving while the lookup slept 0.3 s
        tool_result = w.chat_bodies()[1]["messages"][-1]
        assert tool_result["role"] == "tool" and "1998" in tool_result["content"]


async def test_tool_reasoning_effort_can_be_omitted_for_models_without_reasoning(tmp_path) -> None:
    lookup, ctx = await lookup_world(tmp_path, config={"tool_reasoning_effort": "omit"})
    async with ctx as w:
        await w.kernel.enable_plugin(GUILD, "lookup")
        w.fake.reply_text(envelope(answer=None))
        await w.say("hello")
        [body] = w.chat_bodies()
        assert body["tools"] and "reasoning_effort" not in body


async def test_the_persona_offers_the_tools_the_authors_roles_grant(tmp_path) -> None:
    from gigi_core import Actor

    lookup = Lookup(tmp_path, default="admins")
    async with open_world(tmp_path, None, extra=[("lookup", lookup)]) as w:
        await w.kernel.enable_plugin(GUILD, "lookup")
        await w.kernel.add_grant(GUILD, "lookup.use", "role", "r-gamers")
        w.fake.reply_text(envelope(answer=None))
        await w.say("no member view: the narrowest actor")
        w.poster.members = {"42": (Actor(id="42", roles=frozenset({"r-gamers"})), frozenset())}
        w.fake.reply_text(envelope(answer=None))
        await w.say("now the surface says who 42 is")
        narrow, known = w.chat_bodies()
        offered = [
            {t["function"]["name"] for t in body.get("tools", [])} for body in (narrow, known)
        ]
        assert "lookup__game" not in offered[0] and "lookup__game" in offered[1]
