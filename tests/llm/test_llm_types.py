"""The port's models: JSON round trips (durable runs) and small helpers."""

from __future__ import annotations

import sys

import pytest
from pydantic import TypeAdapter, ValidationError

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    ImagePart,
    Message,
    NamedToolChoice,
    StructuredOutput,
    SystemMessage,
    TextPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def _request() -> ChatRequest:
    return ChatRequest(
        model="openrouter/x-ai/grok-4",
        messages=[
            SystemMessage(content="Be brief."),
            UserMessage(content=[TextPart(text="What is this?"), ImagePart(url="https://x/y.png")]),
            AssistantMessage(
                tool_calls=[ToolCall(id="c1", name="look", arguments={}, raw_arguments="{}")]
            ),
            ToolResultMessage(tool_call_id="c1", content="a cat"),
        ],
        tools=[Tool(name="look", parameters={"type": "object", "properties": {}})],
        tool_choice=NamedToolChoice(name="look"),
        structured_output=StructuredOutput(schema={"type": "object"}),
        reasoning_effort="high",
        max_output_tokens=100,
    )


def test_chat_request_round_trips_through_json() -> None:
    request = _request()
    again = ChatRequest.model_validate_json(request.model_dump_json())
    assert again == request
    assert '"schema":' in request.model_dump_json()


def test_messages_validate_from_plain_dicts() -> None:
    adapter = TypeAdapter(list[Message])
    messages = adapter.validate_python(
        [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "1"}]
    )
    assert isinstance(messages[0], UserMessage) and isinstance(messages[1], ToolResultMessage)
    with pytest.raises(ValidationError):
        adapter.validate_python([{"role": "robot", "content": "hi"}])


def test_system_text_and_conversation() -> None:
    request = _request()
    assert request.system_text() == "Be brief."
    assert all(not isinstance(m, SystemMessage) for m in request.conversation())


def test_image_part_inline_data() -> None:
    part = ImagePart.from_bytes(b"\x89PNG", "image/png")
    assert part.url.startswith("data:image/png;base64,")
    assert part.inline_data() == ("image/png", "iVBORw==")
    assert ImagePart(url="https://example.com/a.png").inline_data() is None


def test_response_to_message_keeps_calls_and_provider_data() -> None:
    response = ChatResponse(
        provider="p",
        text="hm",
        tool_calls=[ToolCall(id="c", name="t", arguments={"a": 1}, raw_arguments='{"a":1}')],
        provider_data={"reasoning_details": [{"type": "x"}]},
    )
    message = response.to_message()
    assert message.tool_calls[0].id == "c"
    assert message.provider_data == {"reasoning_details": [{"type": "x"}]}


def test_importing_the_port_does_not_import_httpx() -> None:
    import subprocess

    code = "import sys, gigi_core.llm; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
