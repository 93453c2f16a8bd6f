"""Shapes real Anthropic traffic had: text split around server tools, inputs left out."""

from __future__ import annotations

from anthropic_fake_extras import API_KEY, message
from gigi_anthropic import AnthropicProvider

from gigi_core.llm import ChatRequest, ChatResponse, Tool, UserMessage
from gigi_core.testing.fake_providers import FakeAnthropic, FakeToolCall

NOW = Tool(name="now", parameters={"type": "object", "properties": {"zone": {"type": "string"}}})
LOOKUP = Tool(
    name="lookup",
    parameters={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
)
REQUEST = ChatRequest(model="claude-x", messages=[UserMessage(content="hi")], tools=[NOW, LOOKUP])


async def _chat(provider: AnthropicProvider, fake: FakeAnthropic) -> ChatResponse:
    return await provider.chat(REQUEST, api_key=API_KEY, base_url=fake.base_url)


async def test_text_around_server_tools_is_joined_with_a_blank_line(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    blocks = [
        {"type": "text", "text": "The last launch was on September 17."},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01",
            "name": "web_search",
            "input": {"query": "next launch"},
        },
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
        {"type": "text", "text": "Here's one coming up: "},
        {"type": "text", "text": "October 2.", "citations": [{"type": "web_search_result"}]},
    ]
    fake.reply_message(message(blocks, "end_turn"))
    response = await _chat(anthropic, fake)
    assert response.text == (
        "The last launch was on September 17.\n\nHere's one coming up: October 2."
    )


async def test_a_left_out_input_is_empty_when_the_tool_requires_nothing(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_tool_calls(FakeToolCall("now", None), FakeToolCall("lookup", None))
    now, lookup = (await _chat(anthropic, fake)).tool_calls
    assert now.ok and now.arguments == {}
    assert not lookup.ok and lookup.parse_error
