"""Defensive parsing of real-world replies: bad tool calls, ids, finish reasons, refusals."""

from __future__ import annotations

import pytest
from gigi_openai import OpenAIProvider, OpenRouterProvider

from gigi_core.llm import ChatRequest, UserMessage
from gigi_core.testing.fake_providers import FakeOpenAI, FakeOpenRouter, FakeToolCall

REQUEST = ChatRequest(model="gpt-x", messages=[UserMessage(content="hi")])


async def _chat(provider: OpenAIProvider, fake: FakeOpenAI):
    return await provider.chat(REQUEST, api_key="sk-test", base_url=fake.base_url)


async def test_text_usage_and_ids(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_text(
        "hello",
        usage={
            "prompt_tokens": 35,
            "completion_tokens": 12,
            "total_tokens": 109,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 62},
        },
    )
    response = await _chat(openai, fake)
    assert response.text == "hello" and response.finish_reason == "stop"
    assert response.tool_calls == [] and response.refusal is None
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (35, 12, 109)
    assert usage.cached_input_tokens == 4 and usage.reasoning_tokens == 62
    assert response.request_id == "req_fake_1" and response.response_id == "chatcmpl-fake"
    assert response.provider == "openai" and response.model == "fake-model"


async def test_parallel_tool_calls_parse(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_tool_calls(
        FakeToolCall("get_weather", {"city": "Oslo"}),
        FakeToolCall("get_weather", {"city": "Rome"}),
        FakeToolCall("get_time"),
    )
    response = await _chat(openai, fake)
    assert response.finish_reason == "tool_calls"
    assert [c.arguments for c in response.tool_calls] == [{"city": "Oslo"}, {"city": "Rome"}, {}]
    assert [c.id for c in response.tool_calls] == ["call_fake_0", "call_fake_1", "call_fake_2"]
    assert all(c.ok for c in response.tool_calls)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ('{"city": "Os', "not valid JSON"),
        ("", "empty"),
        ("null", "got null"),
        ("[]", "got list"),
        ('{"n": NaN}', "not valid JSON"),
        ('"{\\"city\\": \\"Oslo\\"}"', "double-encoded"),
    ],
)
async def test_malformed_arguments_are_kept_as_parse_errors(
    openai: OpenAIProvider, fake: FakeOpenAI, raw: str, fragment: str
) -> None:
    fake.reply_tool_calls(FakeToolCall("get_weather", raw))
    call = (await _chat(openai, fake)).tool_calls[0]
    assert call.arguments is None and not call.ok
    assert call.raw_arguments == raw and fragment in (call.parse_error or "")


async def test_missing_and_empty_ids_are_generated(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    fake.reply_tool_calls(
        FakeToolCall("a", id=None),
        FakeToolCall("b", id=""),
        FakeToolCall("c", id="same"),
        FakeToolCall("d", id="same"),
    )
    calls = (await _chat(openai, fake)).tool_calls
    ids = [c.id for c in calls]
    assert all(ids) and len(set(ids)) == 4 and ids[2] == "same"


async def test_null_finish_reason_is_stop(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_text("local model", finish_reason=None)
    response = await _chat(openai, fake)
    assert response.finish_reason == "stop" and response.raw_finish_reason is None


async def test_length_and_unknown_finish_reasons(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_text("cut", finish_reason="length")
    fake.reply_text("odd", finish_reason="eos_token")
    assert (await _chat(openai, fake)).finish_reason == "length"
    response = await _chat(openai, fake)
    assert response.finish_reason == "other" and response.raw_finish_reason == "eos_token"


async def test_calls_with_stop_finish_reason_are_tool_calls(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    fake.reply_tool_calls(FakeToolCall("t", id=""), finish_reason="stop")
    response = await _chat(openai, fake)
    assert response.finish_reason == "tool_calls" and response.tool_calls[0].id


async def test_refusal(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_refusal("I can't help with that.")
    response = await _chat(openai, fake)
    assert response.refusal == "I can't help with that." and response.text is None
    assert response.finish_reason == "refusal"


async def test_content_filter(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_text("", finish_reason="content_filter")
    response = await _chat(openai, fake)
    assert response.finish_reason == "content_filter" and response.text is None


async def test_content_as_parts_is_joined(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_text("ignored")
    fake.reply_chat(
        {
            "choices": [
                {
                    "finish_reason": "stop",
                    "message": {
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
                    },
                }
            ]
        }
    )
    await _chat(openai, fake)
    assert (await _chat(openai, fake)).text == "ab"


async def test_openrouter_reasoning_and_details_round_trip(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    details = [{"type": "reasoning.encrypted", "data": "xyz"}]
    router.reply_text("42", reasoning="thought hard", reasoning_details=details)
    response = await openrouter.chat(REQUEST, api_key="or-test", base_url=router.base_url)
    assert response.reasoning == "thought hard"
    assert response.to_message().provider_data == {"reasoning_details": details}
