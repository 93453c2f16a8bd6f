"""Request shaping, asserted on what the fake Anthropic server actually received."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from anthropic_fake_extras import API_KEY
from gigi_anthropic import DEFAULT_MAX_TOKENS, THINKING_BUDGETS, AnthropicProvider

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    NamedToolChoice,
    ProviderError,
    SystemMessage,
    TextPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from gigi_core.testing.fake_providers import FakeAnthropic, png_bytes

WEATHER = Tool(
    name="get_weather",
    description="Weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
CLOCK = Tool(name="get_time")


def _request(**kw: Any) -> ChatRequest:
    base: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "messages": [SystemMessage(content="You are Gigi."), UserMessage(content="hi")],
    }
    base.update(kw)
    return ChatRequest(**base)


async def _sent(provider: AnthropicProvider, fake: FakeAnthropic, request: ChatRequest) -> dict:
    fake.reply_text("ok")
    await provider.chat(request, api_key=API_KEY, base_url=fake.base_url)
    return fake.last_request.json


async def test_system_is_top_level_and_headers_carry_key_and_version(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    request = _request(
        messages=[
            SystemMessage(content="You are Gigi."),
            UserMessage(content="hi"),
            SystemMessage(content="Be brief."),
        ]
    )
    body = await _sent(anthropic, fake, request)
    assert body["system"] == "You are Gigi.\n\nBe brief."
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == DEFAULT_MAX_TOKENS
    sent = fake.last_request
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == API_KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert not {"tools", "tool_choice", "thinking", "temperature"} & set(body)


async def test_base_url_with_v1_suffix_is_accepted(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_text("ok")
    await anthropic.chat(_request(), api_key=API_KEY, base_url=fake.base_url + "/v1/")
    assert fake.last_request.path == "/v1/messages"


async def test_no_system_key_without_system_messages(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    body = await _sent(anthropic, fake, _request(messages=[UserMessage(content="hi")]))
    assert "system" not in body


async def test_consecutive_same_role_messages_are_merged(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    messages = [
        UserMessage(content="one"),
        UserMessage(content=[TextPart(text="two")]),
        AssistantMessage(content="a"),
        AssistantMessage(content=None),  # empty: dropped
        AssistantMessage(content="b"),
        UserMessage(content="three"),
    ]
    body = await _sent(anthropic, fake, _request(messages=messages))
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
        {"role": "user", "content": "three"},
    ]
    roles = [m["role"] for m in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))


async def test_tools_and_each_tool_choice(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    expected = {
        "auto": {"type": "auto"},
        "none": {"type": "none"},
        "required": {"type": "any"},
    }
    for choice, wire in expected.items():
        body = await _sent(anthropic, fake, _request(tools=[WEATHER], tool_choice=choice))
        assert body["tool_choice"] == wire
    named = _request(tools=[WEATHER, CLOCK], tool_choice=NamedToolChoice(name="get_time"))
    body = await _sent(anthropic, fake, named)
    assert body["tool_choice"] == {"type": "tool", "name": "get_time"}
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": WEATHER.parameters,
        },
        {"name": "get_time", "input_schema": {"type": "object", "properties": {}}},
    ]
    body = await _sent(anthropic, fake, _request(tools=[WEATHER]))
    assert "tool_choice" not in body


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (None, {"type": "auto", "disable_parallel_tool_use": True}),
        ("auto", {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", {"type": "any", "disable_parallel_tool_use": True}),
        (
            NamedToolChoice(name="get_weather"),
            {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        ),
        ("none", {"type": "none"}),
    ],
)
async def test_parallel_tool_calls_false_disables_parallel_use(
    anthropic: AnthropicProvider, fake: FakeAnthropic, choice: Any, wire: dict
) -> None:
    request = _request(tools=[WEATHER], tool_choice=choice, parallel_tool_calls=False)
    body = await _sent(anthropic, fake, request)
    assert body["tool_choice"] == wire


@pytest.mark.parametrize(("effort", "budget"), sorted(THINKING_BUDGETS.items()))
async def test_reasoning_effort_maps_to_thinking_budget(
    anthropic: AnthropicProvider, fake: FakeAnthropic, effort: str, budget: int
) -> None:
    body = await _sent(anthropic, fake, _request(reasoning_effort=effort))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == budget + DEFAULT_MAX_TOKENS


async def test_thinking_budget_stays_below_max_output_tokens(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    body = await _sent(anthropic, fake, _request(reasoning_effort="high", max_output_tokens=3000))
    assert body["max_tokens"] == 3000 and body["thinking"]["budget_tokens"] == 2999
    body = await _sent(anthropic, fake, _request(reasoning_effort="none", max_output_tokens=300))
    assert body["max_tokens"] == 300 and "thinking" not in body
    options = {"thinking_budget": 5000}
    body = await _sent(anthropic, fake, _request(provider_options=options))
    assert body["thinking"]["budget_tokens"] == 5000


async def test_max_tokens_too_small_for_thinking_is_a_config_error(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    request = _request(reasoning_effort="low", max_output_tokens=512)
    with pytest.raises(ProviderError) as info:
        await anthropic.chat(request, api_key=API_KEY, base_url=fake.base_url)
    assert info.value.error_class == "config" and "max_output_tokens=512" in str(info.value)
    assert fake.requests == []


async def test_forced_tool_with_thinking_falls_back_to_auto_and_restricts_tools(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    named = _request(
        tools=[WEATHER, CLOCK],
        tool_choice=NamedToolChoice(name="get_time"),
        reasoning_effort="medium",
    )
    body = await _sent(anthropic, fake, named)
    assert body["tool_choice"] == {"type": "auto"}
    assert [t["name"] for t in body["tools"]] == ["get_time"]
    required = _request(tools=[WEATHER, CLOCK], tool_choice="required", reasoning_effort="low")
    body = await _sent(anthropic, fake, required)
    assert body["tool_choice"] == {"type": "auto"} and len(body["tools"]) == 2


async def test_images_as_url_and_base64_sources(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    inline = ImagePart.from_bytes(png_bytes(), "image/png")
    message = UserMessage(
        content=[
            TextPart(text="compare"),
            ImagePart(url="https://example.com/a.png", detail="low"),
            inline,
        ]
    )
    body = await _sent(anthropic, fake, _request(messages=[message]))
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "compare"},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": inline.url.partition(",")[2],
            },
        },
    ]


async def test_temperature_extra_body_and_beta_header(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    options = {"extra_body": {"top_k": 5}, "anthropic_beta": ["a-2025", "b-2025"]}
    body = await _sent(anthropic, fake, _request(temperature=0.2, provider_options=options))
    assert body["temperature"] == 0.2 and body["top_k"] == 5
    assert fake.last_request.headers["anthropic-beta"] == "a-2025,b-2025"


async def test_tool_results_grouped_first_in_one_user_turn(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    calls = [
        ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Oslo"}),
        ToolCall(id="call_gen", name="get_weather", raw_arguments='"x"', parse_error="bad"),
    ]
    messages = [
        UserMessage(content="weather?"),
        AssistantMessage(content="Checking.", tool_calls=calls),
        ToolResultMessage(tool_call_id="toolu_1", content="rain"),
        UserMessage(content="also: hurry"),
        ToolResultMessage(tool_call_id="call_gen", content="bad arguments", is_error=True),
    ]
    body = await _sent(anthropic, fake, _request(messages=messages, tools=[WEATHER]))
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "call_gen", "name": "get_weather", "input": {}},
        ],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"},
            {
                "type": "tool_result",
                "tool_use_id": "call_gen",
                "content": "bad arguments",
                "is_error": True,
            },
            {"type": "text", "text": "also: hurry"},
        ],
    }
    assert len(body["messages"]) == 3
