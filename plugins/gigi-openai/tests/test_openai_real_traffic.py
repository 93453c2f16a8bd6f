"""Shapes real endpoints sent: DeepSeek ``reasoning_content``, ``<think>`` tags, Responses
reasoning items, and tool calls with no ``arguments`` field at all (Claude via OpenRouter)."""

from __future__ import annotations

import pytest
from gigi_openai import OpenAICompatibleProvider, OpenAIProvider, OpenRouterProvider

from gigi_core.llm import ChatRequest, Tool, ToolResultMessage, UserMessage
from gigi_core.testing.fake_providers import FakeOpenAI, FakeOpenRouter, FakeToolCall

LOOKUP = Tool(
    name="lookup",
    description="Find an order",
    parameters={
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
)
NOW = Tool(
    name="now",
    description="The time; every parameter optional",
    parameters={"type": "object", "properties": {"zone": {"type": "string"}}},
)
REQUEST = ChatRequest(
    model="deepseek-reasoner", messages=[UserMessage(content="hi")], tools=[LOOKUP, NOW]
)


async def _chat(provider, fake, request: ChatRequest = REQUEST):
    return await provider.chat(request, api_key="sk-test", base_url=fake.base_url)


# ---------------------------------------------------------------- reasoning_content


async def test_reasoning_content_is_echoed_on_a_turn_that_made_tool_calls(
    compatible: OpenAICompatibleProvider, fake: FakeOpenAI
) -> None:
    body_extra = {"reasoning_content": "The user wants the time; call now."}
    fake.reply_chat(
        {
            "id": "x",
            "model": "deepseek-reasoner",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "now", "arguments": "{}"},
                            }
                        ],
                        **body_extra,
                    },
                }
            ],
        }
    )
    fake.reply_text("It is noon.", reasoning_content="Answer with the tool's result.")
    first = await _chat(compatible, fake)
    assert first.reasoning == "The user wants the time; call now."
    follow = REQUEST.model_copy(
        update={
            "messages": [
                *REQUEST.messages,
                first.to_message(),
                ToolResultMessage(tool_call_id="call_1", content="noon"),
            ]
        }
    )
    second = await _chat(compatible, fake, follow)
    assistant = fake.last_request.json["messages"][1]
    assert assistant["role"] == "assistant" and assistant["tool_calls"]
    assert assistant["reasoning_content"] == "The user wants the time; call now."
    # a later turn without tool calls is not echoed (older endpoints reject the field there)
    third = follow.model_copy(
        update={"messages": [*follow.messages, second.to_message(), UserMessage(content="ok")]}
    )
    fake.reply_text("bye")
    await _chat(compatible, fake, third)
    answered = fake.last_request.json["messages"][3]
    assert answered["content"] == "It is noon." and "reasoning_content" not in answered


# ---------------------------------------------------------------- <think> tags


@pytest.mark.parametrize(
    ("content", "reasoning", "text"),
    [
        ("<think>Plan: greet.</think>\n\nHello!", "Plan: greet.", "Hello!"),
        ("  <think>\nA\n</think><think>B</think>Hi", "A\n\nB", "Hi"),
        ("Plan: greet.</think>\n\nHello!", "Plan: greet.", "Hello!"),  # opening tag in the prompt
        ("<think>still thinking when it ran out of tokens", None, None),
        ("No tags here; <think> in prose stays.", None, "No tags here; <think> in prose stays."),
    ],
)
async def test_think_tags_move_to_reasoning(
    compatible: OpenAICompatibleProvider,
    fake: FakeOpenAI,
    content: str,
    reasoning: str | None,
    text: str | None,
) -> None:
    fake.reply_text(content)
    response = await _chat(compatible, fake)
    if reasoning is None and text is None:  # unclosed: all of it was reasoning
        assert response.text is None
        assert response.reasoning == "still thinking when it ran out of tokens"
    else:
        assert (response.reasoning, response.text) == (reasoning, text)


async def test_think_tags_join_a_separate_reasoning_field(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    router.reply_text("<think>inline</think>Answer", reasoning="field")
    response = await openrouter.chat(REQUEST, api_key="or-test", base_url=router.base_url)
    assert response.text == "Answer" and response.reasoning == "field\n\ninline"


# ---------------------------------------------------------------- Responses reasoning


async def test_responses_reasoning_items_become_reasoning(fake: FakeOpenAI, http) -> None:
    provider = OpenAIProvider(http=http, api="responses")
    fake.reply_response(text="42", reasoning_summary=["**Thinking** about it.", "Then answering."])
    response = await _chat(provider, fake)
    assert response.text == "42"
    assert response.reasoning == "**Thinking** about it.\n\nThen answering."
    fake.reply_response(text="ok", reasoning_text=["raw chain of thought"])
    assert (await _chat(provider, fake)).reasoning == "raw chain of thought"


# ---------------------------------------------------------------- missing arguments


async def test_a_missing_arguments_field_is_empty_when_nothing_is_required(
    compatible: OpenAICompatibleProvider, fake: FakeOpenAI
) -> None:
    fake.reply_tool_calls(
        FakeToolCall("now", None), FakeToolCall("lookup", None), FakeToolCall("nope", None)
    )
    now, lookup, unknown = (await _chat(compatible, fake)).tool_calls
    assert now.ok and now.arguments == {} and now.parse_error is None
    assert not lookup.ok and "no arguments" in (lookup.parse_error or "")
    assert not unknown.ok and unknown.parse_error


async def test_responses_missing_arguments_follow_the_same_rule(fake: FakeOpenAI, http) -> None:
    provider = OpenAIProvider(http=http, api="responses")
    fake.reply_response(tool_calls=[FakeToolCall("now", None), FakeToolCall("lookup", None)])
    now, lookup = (await _chat(provider, fake)).tool_calls
    assert now.arguments == {} and lookup.parse_error


async def test_empty_string_arguments_stay_a_parse_error(
    compatible: OpenAICompatibleProvider, fake: FakeOpenAI
) -> None:
    fake.reply_tool_calls(FakeToolCall("now", ""))
    [call] = (await _chat(compatible, fake)).tool_calls
    assert call.parse_error and "empty" in call.parse_error
