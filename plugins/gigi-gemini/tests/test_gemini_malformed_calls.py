"""MALFORMED_FUNCTION_CALL reaches the model as a tool-call error, like other providers' bad
calls: the provider turns it into a ToolCall with a parse error, which the runner feeds back."""

from __future__ import annotations

import pytest
from gemini_fakes import API_KEY
from gigi_gemini import GeminiProvider

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.llm import (
    ChatRequest,
    LlmHttpClient,
    RetryPolicy,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeGemini, RecordingSleep, generate_body

WEATHER = Tool(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
TIME = Tool(name="get_time", parameters={"type": "object", "properties": {}})
REQUEST = ChatRequest(
    model="gemini-2.5-flash", messages=[UserMessage(content="weather?")], tools=[TIME, WEATHER]
)


def malformed(message: str | None) -> dict:
    body = generate_body(finish_reason="MALFORMED_FUNCTION_CALL")
    body["candidates"][0]["content"] = {}
    if message is not None:
        body["candidates"][0]["finishMessage"] = message
    return body


async def test_a_malformed_call_becomes_a_call_with_a_parse_error(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_generate(malformed("Malformed function call: print(default_api.get_weather(city=))"))
    response = await gemini.chat(REQUEST, api_key=API_KEY, base_url=fake.base_url)
    [call] = response.tool_calls
    assert call.name == "get_weather" and call.arguments is None and not call.ok
    assert "MALFORMED_FUNCTION_CALL" in (call.parse_error or "")
    assert "print(default_api.get_weather(city=))" in (call.parse_error or "")
    assert response.raw_finish_reason == "MALFORMED_FUNCTION_CALL"


@pytest.mark.parametrize(
    ("tools", "message", "name"),
    [
        ([TIME, WEATHER], "Malformed function call: something odd", ""),  # no name to go on
        ([WEATHER], None, "get_weather"),  # one tool: it was that one
        ([TIME, WEATHER], "call:get_time{zone:}", "get_time"),
    ],
)
async def test_the_call_is_named_after_a_declared_tool_when_one_is_recognisable(
    gemini: GeminiProvider, fake: FakeGemini, tools: list[Tool], message: str | None, name: str
) -> None:
    fake.reply_generate(malformed(message))
    request = REQUEST.model_copy(update={"tools": tools})
    response = await gemini.chat(request, api_key=API_KEY, base_url=fake.base_url)
    [call] = response.tool_calls
    assert call.name == name and call.parse_error


async def test_the_feedback_goes_back_as_text_not_as_a_made_up_function_call(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_generate(malformed("Malformed function call: print(get_weather(city=))"))
    first = await gemini.chat(REQUEST, api_key=API_KEY, base_url=fake.base_url)
    [call] = first.tool_calls
    follow = REQUEST.model_copy(
        update={
            "messages": [
                *REQUEST.messages,
                first.to_message(),
                ToolResultMessage(
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=True,
                    content='{"error": "arguments are not a JSON object (...)"}',
                ),
            ]
        }
    )
    fake.reply_text("Which city?")
    second = await gemini.chat(follow, api_key=API_KEY, base_url=fake.base_url)
    assert second.text == "Which city?"
    contents = fake.last_request.json["contents"]
    parts = [p for turn in contents for p in turn["parts"]]
    assert not any("functionCall" in p or "functionResponse" in p for p in parts)
    assert contents[-1]["role"] == "user"
    assert "arguments are not a JSON object" in contents[-1]["parts"][-1]["text"]


async def test_the_runner_feeds_the_error_back_and_the_run_completes(tmp_path) -> None:
    """End to end: kernel, policy, runner and the real provider against the fake."""
    async with (
        open_test_kernel(tmp_path, plugins=["gemini", "dice"]) as kernel,
        FakeGemini(api_key=API_KEY) as fake,
    ):
        kernel.registry.provider("gemini")._http = LlmHttpClient(
            retry=RetryPolicy(jitter=lambda: 1.0), sleep=RecordingSleep()
        )
        await kernel.enable_plugin("g1", "dice")
        await kernel.llm.add_credential(
            "guild:g1", "gemini", "main", API_KEY, base_url=fake.base_url
        )
        await kernel.llm.set_profile("guild:g1", "chat", "main", "gemini-2.5-flash")
        fake.reply_generate(malformed("Malformed function call: print(dice__roll(sides=six))"))
        fake.reply_text("I could not roll; how many sides?")
        runtime = AgentRuntime(kernel)
        request = Request(
            actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="mention", text="roll"
        )
        reply = await runtime.handle(request)
        assert reply.status == "done" and reply.termination_reason == "completed"
        assert reply.text == "I could not roll; how many sides?"
        trace = await runtime.trace(reply.run_id)
        assert [(s["kind"], s["status"]) for s in trace["steps"]] == [
            ("llm", "ok"),
            ("tool", "invalid"),
            ("llm", "ok"),
        ]
        fed_back = fake.last_request.json["contents"][-1]["parts"][-1]["text"]
        assert "MALFORMED_FUNCTION_CALL" in fed_back and "dice__roll(sides=six)" in fed_back
