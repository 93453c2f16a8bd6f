"""Defensive parsing of replies: tool inputs, ids, stop reasons, refusals, usage."""

from __future__ import annotations

import pytest
from anthropic_fake_extras import API_KEY, USAGE, message
from gigi_anthropic import AnthropicProvider

from gigi_core.llm import ChatRequest, ChatResponse, ProviderError, UserMessage
from gigi_core.testing.fake_providers import FakeAnthropic, FakeToolCall, message_body

REQUEST = ChatRequest(model="claude-x", messages=[UserMessage(content="hi")])


async def _chat(provider: AnthropicProvider, fake: FakeAnthropic) -> ChatResponse:
    return await provider.chat(REQUEST, api_key=API_KEY, base_url=fake.base_url)


async def test_text_usage_and_ids(anthropic: AnthropicProvider, fake: FakeAnthropic) -> None:
    fake.reply_message(message([{"type": "text", "text": "hello"}], "end_turn"))
    response = await _chat(anthropic, fake)
    assert response.text == "hello" and response.finish_reason == "stop"
    assert response.raw_finish_reason == "end_turn" and response.refusal is None
    assert response.tool_calls == [] and response.provider_data == {}
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (880, 89)
    assert usage.cached_input_tokens == USAGE["cache_read_input_tokens"]
    assert usage.total_tokens is None and usage.reasoning_tokens is None
    assert response.response_id == "msg_01XFDUDYJgAACzvnptvVoYEL"
    assert response.provider == "anthropic" and response.model == "claude-fake"
    assert response.request_id == "req_fake_1"


async def test_tool_calls_parse(anthropic: AnthropicProvider, fake: FakeAnthropic) -> None:
    fake.reply_tool_calls(
        FakeToolCall("get_weather", {"city": "Oslo"}),
        FakeToolCall("get_time"),
        text="Let me look.",
    )
    response = await _chat(anthropic, fake)
    assert response.finish_reason == "tool_calls" and response.text == "Let me look."
    assert [c.id for c in response.tool_calls] == ["toolu_fake_0", "toolu_fake_1"]
    assert [c.arguments for c in response.tool_calls] == [{"city": "Oslo"}, {}]
    assert all(c.ok for c in response.tool_calls)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ('{"city": "Os', "not valid JSON"),
        ("", "empty"),
        ("null", "got null"),
        ('"{\\"city\\": \\"Oslo\\"}"', "double-encoded"),
    ],
)
async def test_malformed_string_input_is_a_parse_error(
    anthropic: AnthropicProvider, fake: FakeAnthropic, raw: str, fragment: str
) -> None:
    fake.reply_tool_calls(FakeToolCall("get_weather", raw))
    (call,) = (await _chat(anthropic, fake)).tool_calls
    assert call.arguments is None and not call.ok
    assert fragment in (call.parse_error or "") and call.raw_arguments == raw


@pytest.mark.parametrize("value", [None, [1, 2], 7])
async def test_non_object_input_is_a_parse_error(
    anthropic: AnthropicProvider, fake: FakeAnthropic, value: object
) -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": value}
    fake.reply_message(message([block], "tool_use"))
    (call,) = (await _chat(anthropic, fake)).tool_calls
    assert call.arguments is None and call.parse_error and call.id == "toolu_1"


async def test_missing_empty_and_duplicate_ids_are_generated(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_tool_calls(
        FakeToolCall("a", id=None),
        FakeToolCall("b", id=""),
        FakeToolCall("c", id="toolu_same"),
        FakeToolCall("d", id="toolu_same"),
    )
    calls = (await _chat(anthropic, fake)).tool_calls
    ids = [c.id for c in calls]
    assert ids[2] == "toolu_same" and len(set(ids)) == 4
    assert all(i for i in ids) and all(c.ok for c in calls)


async def test_missing_tool_name_is_a_parse_error(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_message(message([{"type": "tool_use", "id": "t", "input": {}}], "tool_use"))
    (call,) = (await _chat(anthropic, fake)).tool_calls
    assert not call.ok and "no function name" in (call.parse_error or "")


async def test_refusal_surfaces_as_refusal(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_refusal()
    response = await _chat(anthropic, fake)
    assert response.finish_reason == "refusal" and response.refusal
    assert response.text is None and response.raw_finish_reason == "refusal"
    fake.reply_refusal("I can't help with that.")
    response = await _chat(anthropic, fake)
    assert response.refusal == "I can't help with that." and response.text is None


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("pause_turn", "other"),
        ("something_new", "other"),
        (None, "stop"),
    ],
)
async def test_stop_reason_mapping(
    anthropic: AnthropicProvider, fake: FakeAnthropic, stop_reason: str | None, finish: str
) -> None:
    fake.reply_message(message([{"type": "text", "text": "x"}], stop_reason))
    response = await _chat(anthropic, fake)
    assert response.finish_reason == finish and response.raw_finish_reason == stop_reason


async def test_null_stop_reason_with_calls_is_tool_calls(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    block = {"type": "tool_use", "id": "t", "name": "a", "input": {}}
    fake.reply_message(message([block], None))
    assert (await _chat(anthropic, fake)).finish_reason == "tool_calls"


async def test_thinking_goes_to_reasoning_and_provider_data(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_message(message_body(text="42", thinking="Deep thought."))
    response = await _chat(anthropic, fake)
    assert response.text == "42" and response.reasoning == "Deep thought."
    assert response.provider_data["anthropic_content"][0]["signature"] == "sig_fake"
    assert response.to_message().provider_data == response.provider_data


@pytest.mark.parametrize("body", [{"id": "msg"}, {"content": "text"}, []])
async def test_body_without_content_is_an_invalid_response(
    anthropic: AnthropicProvider, fake: FakeAnthropic, body: object
) -> None:
    fake.reply_message(body)
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake)
    assert info.value.error_class == "invalid_response"
