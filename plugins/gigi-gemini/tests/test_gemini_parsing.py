"""Reply parsing and continuation: ids, thought signatures, finish reasons, blocked prompts."""

from __future__ import annotations

import pytest
from gemini_fakes import API_KEY
from gigi_gemini import GeminiProvider

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    ProviderError,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from gigi_core.testing.fake_providers import FakeGemini, FakeToolCall, generate_body

REQUEST = ChatRequest(model="gemini-2.5-flash", messages=[UserMessage(content="weather?")])
SIGNATURE = "Es8FCswFAdHtim8+opaque=="


async def _chat(gemini: GeminiProvider, fake: FakeGemini, request: ChatRequest = REQUEST):
    return await gemini.chat(request, api_key=API_KEY, base_url=fake.base_url)


async def test_text_and_usage_mapping(gemini: GeminiProvider, fake: FakeGemini) -> None:
    usage = {
        "promptTokenCount": 83,
        "candidatesTokenCount": 30,
        "thoughtsTokenCount": 190,
        "cachedContentTokenCount": 64,
        "totalTokenCount": 303,
    }
    fake.reply_text("Sunny.", usage=usage)
    response = await _chat(gemini, fake)
    assert response.text == "Sunny." and response.finish_reason == "stop"
    assert response.raw_finish_reason == "STOP" and response.tool_calls == []
    assert (response.model, response.response_id) == ("gemini-fake", "resp_fake")
    assert response.request_id == "req_fake_1"
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.reasoning_tokens) == (83, 30, 190)
    assert (u.cached_input_tokens, u.total_tokens) == (64, 303)
    assert response.provider_data == {}


async def test_missing_ids_are_generated_and_distinct_for_the_same_function(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_tool_calls(
        FakeToolCall("get_weather", {"city": "Oslo"}, id=None),
        FakeToolCall("get_weather", {"city": "Paris"}, id=None),
        FakeToolCall("get_time", {}, id=""),
    )
    response = await _chat(gemini, fake)
    calls = response.tool_calls
    assert response.finish_reason == "tool_calls" and response.raw_finish_reason == "STOP"
    assert [c.name for c in calls] == ["get_weather", "get_weather", "get_time"]
    assert [c.arguments for c in calls] == [{"city": "Oslo"}, {"city": "Paris"}, {}]
    assert all(c.ok and c.id for c in calls) and len({c.id for c in calls}) == 3


async def test_native_ids_are_kept_and_echoed(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.reply_tool_calls(FakeToolCall("get_weather", {"city": "Oslo"}, id="c1"))
    response = await _chat(gemini, fake)
    assert response.tool_calls[0].id == "c1"
    messages = [
        *REQUEST.messages,
        response.to_message(),
        ToolResultMessage(tool_call_id="c1", content="rain"),
    ]
    fake.reply_text("done")
    await _chat(gemini, fake, REQUEST.model_copy(update={"messages": messages}))
    contents = fake.last_request.json["contents"]
    assert contents[1]["parts"][0]["functionCall"] == {
        "name": "get_weather",
        "args": {"city": "Oslo"},
        "id": "c1",
    }
    assert contents[2]["parts"][0]["functionResponse"] == {
        "name": "get_weather",
        "response": {"output": "rain"},
        "id": "c1",
    }


async def test_thought_signature_roundtrip(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.reply_tool_calls(
        FakeToolCall("get_weather", {"city": "Oslo"}, id=None),
        FakeToolCall("get_weather", {"city": "Paris"}, id=None),
        thought_signature=SIGNATURE,
    )
    first = await _chat(gemini, fake)
    oslo, paris = first.tool_calls
    assert oslo.provider_data["thought_signature"] == SIGNATURE
    # a durable run stores the conversation as JSON and reloads it
    stored = [first.to_message().model_dump_json()]
    assistant = AssistantMessage.model_validate_json(stored[0])
    messages = [
        UserMessage(content="weather?"),
        assistant,
        ToolResultMessage(tool_call_id=oslo.id, content="rain"),
        ToolResultMessage(tool_call_id=paris.id, content="no such city", is_error=True),
    ]
    fake.reply_text("Rain in Oslo.")
    second = await _chat(gemini, fake, REQUEST.model_copy(update={"messages": messages}))
    assert second.text == "Rain in Oslo."
    contents = fake.last_request.json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"] == [
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
            "thoughtSignature": SIGNATURE,
        },
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": SIGNATURE,
        },
    ]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"output": "rain"}}},
        {"functionResponse": {"name": "get_weather", "response": {"error": "no such city"}}},
    ]


async def test_signature_on_text_part_is_echoed_verbatim(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    parts = [
        {"text": "thinking about it", "thought": True},
        {"text": "Hello", "thoughtSignature": SIGNATURE},
    ]
    body = generate_body(text="x")
    body["candidates"][0]["content"]["parts"] = parts
    fake.reply_generate(body)
    response = await _chat(gemini, fake)
    assert response.text == "Hello" and response.reasoning == "thinking about it"
    messages = [*REQUEST.messages, response.to_message(), UserMessage(content="and now?")]
    fake.reply_text("ok")
    await _chat(gemini, fake, REQUEST.model_copy(update={"messages": messages}))
    assert fake.last_request.json["contents"][1] == {"role": "model", "parts": parts}


async def test_rebuilt_turn_keeps_per_call_signatures(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    """An assistant turn without the kept parts (edited, or built by hand) is rebuilt."""
    call = ToolCall(
        id="call_x",
        name="get_time",
        arguments={"tz": "UTC"},
        provider_data={"thought_signature": SIGNATURE},
    )
    messages = [
        UserMessage(content="time?"),
        AssistantMessage(content="Checking.", tool_calls=[call]),
        ToolResultMessage(tool_call_id="call_x", content="12:00"),
    ]
    fake.reply_text("noon")
    await _chat(gemini, fake, REQUEST.model_copy(update={"messages": messages}))
    contents = fake.last_request.json["contents"]
    assert contents[1]["parts"] == [
        {"text": "Checking."},
        {
            "functionCall": {"name": "get_time", "args": {"tz": "UTC"}},
            "thoughtSignature": SIGNATURE,
        },
    ]
    assert contents[2]["parts"][0]["functionResponse"]["name"] == "get_time"


async def test_tool_result_for_unknown_call_without_name_fails_clearly(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    messages = [UserMessage(content="x"), ToolResultMessage(tool_call_id="nope", content="1")]
    with pytest.raises(ProviderError) as info:
        await _chat(gemini, fake, REQUEST.model_copy(update={"messages": messages}))
    assert info.value.error_class == "bad_request" and "nope" in str(info.value)
    assert fake.requests == []


async def test_non_object_args_are_a_parse_error(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.reply_tool_calls(FakeToolCall("get_weather", "{not json", id=None))
    (call,) = (await _chat(gemini, fake)).tool_calls
    assert not call.ok and call.arguments is None and call.parse_error
    assert call.raw_arguments == "{not json"


async def test_malformed_function_call_is_never_executed(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_malformed_function_call()
    response = await _chat(gemini, fake)
    [call] = response.tool_calls  # a call with a parse error: fed back, never executed
    assert not call.ok and call.arguments is None and call.parse_error
    assert response.text is None
    assert response.finish_reason == "error"
    assert response.raw_finish_reason == "MALFORMED_FUNCTION_CALL"
    assert "MALFORMED_FUNCTION_CALL" in response.provider_data["feedback"]


async def test_malformed_function_call_keeps_gemini_finish_message(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    body = generate_body(finish_reason="MALFORMED_FUNCTION_CALL")
    body["candidates"][0]["content"] = {}
    body["candidates"][0]["finishMessage"] = "Malformed function call: print(get_weather(city=))"
    fake.reply_generate(body)
    response = await _chat(gemini, fake)
    assert response.provider_data["finish_message"].startswith("Malformed function call")
    assert "print(get_weather(city=))" in response.provider_data["feedback"]


async def test_blocked_prompt_is_a_refusal(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.reply_blocked("PROHIBITED_CONTENT")
    response = await _chat(gemini, fake)
    assert response.finish_reason == "refusal" and response.text is None
    assert response.raw_finish_reason == "PROHIBITED_CONTENT"
    assert response.refusal and "PROHIBITED_CONTENT" in response.refusal


async def test_safety_stop_is_a_content_filter(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.reply_generate(generate_body(finish_reason="SAFETY"))
    response = await _chat(gemini, fake)
    assert response.finish_reason == "content_filter" and response.refusal


async def test_max_tokens_and_null_finish_reason(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.reply_text("cut", finish_reason="MAX_TOKENS")
    fake.reply_text("fine", finish_reason=None)
    assert (await _chat(gemini, fake)).finish_reason == "length"
    response = await _chat(gemini, fake)
    assert response.finish_reason == "stop" and response.raw_finish_reason is None


async def test_no_candidates_is_an_invalid_response(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_generate({"usageMetadata": {"promptTokenCount": 3}})
    with pytest.raises(ProviderError) as info:
        await _chat(gemini, fake)
    assert info.value.error_class == "invalid_response"
