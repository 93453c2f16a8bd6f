"""Request shaping per provider, asserted on what the fake server actually received."""

from __future__ import annotations

from typing import Any

from gigi_openai import OpenAICompatibleProvider, OpenAIProvider, OpenRouterProvider

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    NamedToolChoice,
    StructuredOutput,
    SystemMessage,
    TextPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from gigi_core.testing.fake_providers import FakeOpenAI, FakeOpenRouter, png_bytes

WEATHER = Tool(
    name="get_weather",
    description="Weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)


def _request(**kw: Any) -> ChatRequest:
    base: dict[str, Any] = {
        "model": "gpt-x",
        "messages": [SystemMessage(content="You are Gigi."), UserMessage(content="hi")],
    }
    base.update(kw)
    return ChatRequest(**base)


async def _sent(provider: Any, fake: FakeOpenAI, request: ChatRequest, key: str) -> dict:
    fake.reply_text("ok")
    await provider.chat(request, api_key=key, base_url=fake.base_url)
    return fake.last_request.json


async def test_system_first_and_bearer_auth(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    body = await _sent(openai, fake, _request(), "sk-test")
    assert body["messages"][0] == {"role": "system", "content": "You are Gigi."}
    assert body["messages"][1] == {"role": "user", "content": "hi"}
    assert fake.last_request.path == "/v1/chat/completions"
    assert fake.last_request.headers["authorization"] == "Bearer sk-test"
    assert "tools" not in body and "reasoning_effort" not in body


async def test_tools_and_each_tool_choice(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    expected = {
        "auto": "auto",
        "none": "none",
        "required": "required",
    }
    for choice, wire in expected.items():
        body = await _sent(openai, fake, _request(tools=[WEATHER], tool_choice=choice), "sk-test")
        assert body["tool_choice"] == wire
    named = _request(tools=[WEATHER], tool_choice=NamedToolChoice(name="get_weather"))
    body = await _sent(openai, fake, named, "sk-test")
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert "parallel_tool_calls" not in body


async def test_strict_tool_disables_parallel_calls(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    strict = WEATHER.model_copy(update={"strict": True})
    body = await _sent(openai, fake, _request(tools=[strict]), "sk-test")
    assert body["tools"][0]["function"]["strict"] is True
    assert body["parallel_tool_calls"] is False


async def test_images_pass_through_for_https_and_data_urls(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    inline = ImagePart.from_bytes(png_bytes(), "image/png")
    message = UserMessage(
        content=[
            TextPart(text="compare"),
            ImagePart(url="https://example.com/a.png", detail="low"),
            inline,
        ]
    )
    body = await _sent(openai, fake, _request(messages=[message]), "sk-test")
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "compare"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": inline.url}},
    ]


async def test_reasoning_and_max_tokens_mapping_per_provider(
    openai: OpenAIProvider,
    openrouter: OpenRouterProvider,
    compatible: OpenAICompatibleProvider,
    fake: FakeOpenAI,
    router: FakeOpenRouter,
) -> None:
    request = _request(reasoning_effort="high", max_output_tokens=256)
    body = await _sent(openai, fake, request, "sk-test")
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 256
    assert "reasoning" not in body and "max_tokens" not in body

    body = await _sent(openrouter, router, request, "or-test")
    assert body["reasoning"] == {"effort": "high"} and body["max_tokens"] == 256
    assert "reasoning_effort" not in body

    body = await _sent(compatible, fake, request, "sk-test")
    assert body["reasoning_effort"] == "high" and body["max_tokens"] == 256


async def test_no_reasoning_key_when_effort_unset(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    body = await _sent(openrouter, router, _request(), "or-test")
    assert "reasoning" not in body and "reasoning_effort" not in body


async def test_structured_output(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    out = StructuredOutput(schema=schema, name="count", strict=True)
    body = await _sent(openai, fake, _request(structured_output=out), "sk-test")
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "count", "schema": schema, "strict": True},
    }


async def test_continuation_echoes_calls_and_results(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    call = ToolCall(
        id="call_1", name="get_weather", arguments={"city": "Oslo"}, raw_arguments='{"city":"Oslo"}'
    )
    details = [{"type": "reasoning.summary", "summary": "thinking"}]
    messages = [
        UserMessage(content="weather?"),
        AssistantMessage(tool_calls=[call], provider_data={"reasoning_details": details}),
        ToolResultMessage(tool_call_id="call_1", content="rain"),
    ]
    body = await _sent(openrouter, router, _request(messages=messages), "or-test")
    assistant, result = body["messages"][1], body["messages"][2]
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
        }
    ]
    assert assistant["reasoning_details"] == details
    assert result == {"role": "tool", "tool_call_id": "call_1", "content": "rain"}


async def test_extra_body_and_temperature(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    request = _request(temperature=0.2, provider_options={"extra_body": {"seed": 7}})
    body = await _sent(openai, fake, request, "sk-test")
    assert body["temperature"] == 0.2 and body["seed"] == 7


async def test_openrouter_strips_prefix_and_sends_attribution(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    body = await _sent(openrouter, router, _request(model="openrouter/x-ai/grok-4.5"), "or-test")
    assert body["model"] == "x-ai/grok-4.5"
    assert router.last_request.path == "/api/v1/chat/completions"
    assert router.last_request.headers["x-title"] == "Gigi"
    assert "http-referer" in router.last_request.headers


async def test_compatible_sends_model_verbatim_and_no_auth_without_key(
    compatible: OpenAICompatibleProvider,
) -> None:
    async with FakeOpenAI() as local:
        body = await _sent(compatible, local, _request(model="llama3.2:3b"), "")
        assert body["model"] == "llama3.2:3b"
        assert "authorization" not in local.last_request.headers
