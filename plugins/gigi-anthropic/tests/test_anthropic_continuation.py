"""Round trips: thinking blocks echoed verbatim, pause_turn, structured output via a tool."""

from __future__ import annotations

import json

from anthropic_fake_extras import (
    API_KEY,
    interleaved_tool_use_body,
    message,
    pause_turn_body,
    redacted_thinking_block,
    thinking_block,
)
from gigi_anthropic import CONTENT_KEY, AnthropicProvider

from gigi_core.llm import (
    ChatRequest,
    NamedToolChoice,
    StructuredOutput,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from gigi_core.testing.fake_providers import FakeAnthropic, FakeToolCall, message_body

WEATHER = Tool(name="get_weather", parameters={"type": "object", "properties": {}})
CLOCK = Tool(name="get_time")
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
OUT = StructuredOutput(schema=SCHEMA, name="count", description="The count.")


def _request(messages: list, **kw: object) -> ChatRequest:
    return ChatRequest(model="claude-x", messages=messages, **kw)


async def _chat(provider: AnthropicProvider, fake: FakeAnthropic, request: ChatRequest):
    return await provider.chat(request, api_key=API_KEY, base_url=fake.base_url)


async def test_thinking_blocks_are_echoed_verbatim_with_tool_results(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_message(
        message_body(
            thinking="Let me check.",
            tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"})],
            stop_reason="tool_use",
        )
    )
    history: list = [UserMessage(content="weather in Oslo?")]
    first = await _chat(anthropic, fake, _request(history, tools=[WEATHER], reasoning_effort="low"))
    assert first.reasoning == "Let me check." and first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    history += [first.to_message(), ToolResultMessage(tool_call_id=call.id, content="rain")]

    fake.reply_text("It rains.")
    second = await _chat(
        anthropic, fake, _request(history, tools=[WEATHER], reasoning_effort="low")
    )
    assert second.text == "It rains."
    sent = fake.last_request.json["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Let me check.", "signature": "sig_fake"},
            {
                "type": "tool_use",
                "id": "toolu_fake_0",
                "name": "get_weather",
                "input": {"city": "Oslo"},
            },
        ],
    }
    assert sent[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_fake_0", "content": "rain"}],
    }


async def test_interleaved_and_redacted_thinking_keep_order_and_generated_ids(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_message(interleaved_tool_use_body())
    history: list = [UserMessage(content="weather and time?")]
    first = await _chat(anthropic, fake, _request(history, tools=[WEATHER, CLOCK]))
    generated, given = first.tool_calls
    assert generated.id.startswith("call_") and given.id == "toolu_01B"
    assert len(first.provider_data[CONTENT_KEY]) == 4
    history += [
        first.to_message(),
        ToolResultMessage(tool_call_id=generated.id, content="rain"),
        ToolResultMessage(tool_call_id=given.id, content="noon"),
    ]
    fake.reply_text("Rain at noon.")
    await _chat(anthropic, fake, _request(history, tools=[WEATHER, CLOCK]))
    assistant, results = fake.last_request.json["messages"][1:]
    assert assistant["content"] == [
        thinking_block("I need the weather first."),
        {"type": "tool_use", "id": generated.id, "name": "get_weather", "input": {"city": "Oslo"}},
        redacted_thinking_block(),
        {"type": "tool_use", "id": "toolu_01B", "name": "get_time", "input": {}},
    ]
    assert [b["tool_use_id"] for b in results["content"]] == [generated.id, "toolu_01B"]


async def test_pause_turn_continues_by_sending_the_turn_back_unchanged(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_message(pause_turn_body())
    history: list = [UserMessage(content="search the weather")]
    paused = await _chat(anthropic, fake, _request(history))
    assert paused.finish_reason == "other" and paused.raw_finish_reason == "pause_turn"
    assert paused.text == "Searching." and paused.tool_calls == []
    history.append(paused.to_message())
    fake.reply_text("Found it.")
    await _chat(anthropic, fake, _request(history))
    sent = fake.last_request.json["messages"]
    assert sent[-1] == {"role": "assistant", "content": pause_turn_body()["content"]}


async def test_structured_output_is_a_forced_tool_and_returns_json_text(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_message(
        message_body(
            text="Here you go.",
            tool_calls=[FakeToolCall("count", {"n": 3})],
            stop_reason="tool_use",
        )
    )
    request = _request([UserMessage(content="count")], structured_output=OUT)
    response = await _chat(anthropic, fake, request)
    body = fake.last_request.json
    assert body["tools"] == [{"name": "count", "description": "The count.", "input_schema": SCHEMA}]
    assert body["tool_choice"] == {"type": "tool", "name": "count"}
    assert json.loads(response.text) == {"n": 3}
    assert response.tool_calls == [] and response.finish_reason == "stop"
    assert response.provider_data == {}  # nothing opaque to echo

    # the answer continues as plain assistant text, never as an unanswered tool_use
    history = [UserMessage(content="count"), response.to_message(), UserMessage(content="again")]
    fake.reply_text("ok")
    await _chat(anthropic, fake, _request(history))
    assert fake.last_request.json["messages"][1] == {"role": "assistant", "content": '{"n": 3}'}


async def test_structured_output_next_to_tools_requires_some_tool(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_tool_calls(FakeToolCall("get_weather", {}))
    request = _request([UserMessage(content="count")], tools=[WEATHER], structured_output=OUT)
    response = await _chat(anthropic, fake, request)
    body = fake.last_request.json
    assert [t["name"] for t in body["tools"]] == ["get_weather", "count"]
    assert body["tool_choice"] == {"type": "any"}
    assert [c.name for c in response.tool_calls] == ["get_weather"]
    assert response.finish_reason == "tool_calls" and response.text is None


async def test_structured_output_with_thinking_is_auto_on_the_output_tool_only(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_message(
        message(
            [
                thinking_block("counting"),
                {"type": "tool_use", "id": "t1", "name": "count", "input": {"n": 2}},
            ],
            "tool_use",
        )
    )
    request = _request(
        [UserMessage(content="count")],
        tools=[WEATHER],
        tool_choice=NamedToolChoice(name="count"),
        structured_output=OUT,
        reasoning_effort="low",
    )
    response = await _chat(anthropic, fake, request)
    body = fake.last_request.json
    assert body["tool_choice"] == {"type": "auto"} and [t["name"] for t in body["tools"]] == [
        "count"
    ]
    assert json.loads(response.text) == {"n": 2} and response.reasoning == "counting"

    # echoing a thinking turn keeps the signed block and turns the answer into text
    history = [UserMessage(content="count"), response.to_message(), UserMessage(content="more")]
    fake.reply_text("ok")
    await _chat(anthropic, fake, _request(history))
    assert fake.last_request.json["messages"][1]["content"] == [
        thinking_block("counting"),
        {"type": "text", "text": '{"n": 2}'},
    ]
