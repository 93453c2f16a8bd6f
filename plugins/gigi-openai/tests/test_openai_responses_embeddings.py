"""The Responses API path (behind a setting) and embeddings."""

from __future__ import annotations

import pytest
from gigi_openai import OpenAICompatibleProvider, OpenAIProvider, OpenRouterProvider

from gigi_core.llm import (
    AssistantMessage,
    ChatRequest,
    EmbeddingRequest,
    ImagePart,
    NamedToolChoice,
    ProviderError,
    StructuredOutput,
    SystemMessage,
    TextPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from gigi_core.testing.fake_providers import FakeOpenAI, FakeToolCall, fake_vector

CALL = ToolCall(id="c1", name="look", arguments={"q": 1}, raw_arguments='{"q": 1}')


async def test_responses_api_request_shape(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_response(text="done")
    request = ChatRequest(
        model="gpt-5",
        messages=[
            SystemMessage(content="Be Gigi."),
            UserMessage(content=[TextPart(text="see"), ImagePart(url="https://x/a.png")]),
            AssistantMessage(content="looking", tool_calls=[CALL]),
            ToolResultMessage(tool_call_id="c1", content="a cat"),
        ],
        tools=[Tool(name="look", strict=True)],
        tool_choice=NamedToolChoice(name="look"),
        structured_output=StructuredOutput(schema={"type": "object"}, name="out"),
        reasoning_effort="low",
        max_output_tokens=50,
        provider_options={"api": "responses"},
    )
    response = await openai.chat(request, api_key="sk-test", base_url=fake.base_url)
    body = fake.last_request.json
    assert fake.last_request.path == "/v1/responses" and response.text == "done"
    assert body["instructions"] == "Be Gigi." and body["store"] is False
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "https://x/a.png"},
            ],
        },
        {"role": "assistant", "content": "looking"},
        {"type": "function_call", "call_id": "c1", "name": "look", "arguments": '{"q": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a cat"},
    ]
    assert body["tools"][0]["name"] == "look" and body["tools"][0]["strict"] is True
    assert body["tool_choice"] == {"type": "function", "name": "look"}
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["reasoning"] == {"effort": "low"} and body["max_output_tokens"] == 50


async def test_responses_api_parsing(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider(api="responses")
    fake.reply_response(tool_calls=[FakeToolCall("look", "{bad", id=None)])
    fake.reply_response(refusal="no")
    fake.reply_response(text="cut", status="incomplete", incomplete_reason="max_output_tokens")
    request = ChatRequest(model="gpt-5", messages=[UserMessage(content="hi")])
    first = await provider.chat(request, api_key="sk-test", base_url=fake.base_url)
    call = first.tool_calls[0]
    assert first.finish_reason == "tool_calls" and call.id and call.parse_error
    assert first.usage.cached_input_tokens == 2 and first.usage.reasoning_tokens == 3
    second = await provider.chat(request, api_key="sk-test", base_url=fake.base_url)
    assert second.refusal == "no" and second.finish_reason == "refusal"
    third = await provider.chat(request, api_key="sk-test", base_url=fake.base_url)
    assert third.finish_reason == "length" and third.text == "cut"


async def test_embeddings_batch(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    request = EmbeddingRequest(model="text-embedding-3-small", inputs=["a", "b", "c"])
    response = await openai.embed(request, api_key="sk-test", base_url=fake.base_url)
    assert response.dimension == 8 and len(response.vectors) == 3
    assert response.vectors[0] == fake_vector("a", 8)
    assert fake.last_request.json == {
        "model": "text-embedding-3-small",
        "input": ["a", "b", "c"],
        "encoding_format": "float",
    }
    assert response.usage.input_tokens == 9


async def test_embeddings_dimensions_and_order(
    openrouter: OpenRouterProvider, compatible: OpenAICompatibleProvider
) -> None:
    async with FakeOpenAI() as fake:
        request = EmbeddingRequest(model="openrouter/openai/e3", inputs=["x"], dimensions=4)
        response = await openrouter.embed(request, api_key="k", base_url=fake.base_url)
        assert response.dimension == 4 and fake.last_request.json["model"] == "openai/e3"
        body = fake.embeddings_body([[1.0, 2.0], [3.0, 4.0]])
        body["data"].reverse()
        fake.reply_raw(200, json=body, route="embeddings")
        two = EmbeddingRequest(model="m", inputs=["p", "q"])
        response = await compatible.embed(two, api_key="k", base_url=fake.base_url)
        assert response.vectors == [[1.0, 2.0], [3.0, 4.0]]


async def test_embeddings_count_mismatch_is_invalid(
    compatible: OpenAICompatibleProvider,
) -> None:
    async with FakeOpenAI() as fake:
        fake.reply_embeddings([[0.1, 0.2]])
        request = EmbeddingRequest(model="m", inputs=["a", "b"])
        with pytest.raises(ProviderError) as info:
            await compatible.embed(request, api_key="k", base_url=fake.base_url)
        assert info.value.error_class == "invalid_response" and "expected 2" in str(info.value)


async def test_responses_tool_loop_is_stateless_and_passes_reasoning_back(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    """ENV-23: store=false, encrypted reasoning included, and the reasoning and function_call
    items go back reduced to their input shape with one function_call_output per call."""
    from gigi_core.testing.fake_providers.openai import responses_body

    first = responses_body(
        tool_calls=[FakeToolCall("look", {"q": 1}), FakeToolCall("look", {"q": 2})],
        reasoning_summary=["thinking"],
    )
    first["output"][0].update(encrypted_content="ENC", status="completed")
    for item in first["output"][1:]:
        item.update(status="completed", id="fc_x")
    fake.reply_raw(200, json=first, route="responses")
    fake.reply_response(text="done")
    request = ChatRequest(
        model="gpt-5",
        messages=[UserMessage(content="look twice")],
        tools=[Tool(name="look")],
        provider_options={"api": "responses"},
    )
    reply = await openai.chat(request, api_key="sk-test", base_url=fake.base_url)
    body = fake.last_request.json
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    follow = request.model_copy(
        update={
            "messages": [
                *request.messages,
                reply.to_message(),
                *(
                    ToolResultMessage(tool_call_id=c.id, content=f"r{c.id}")
                    for c in reply.tool_calls
                ),
            ]
        }
    )
    await openai.chat(follow, api_key="sk-test", base_url=fake.base_url)
    sent = fake.last_request.json["input"]
    assert sent[1] == {
        "type": "reasoning",
        "id": "rs_fake",
        "summary": [{"type": "summary_text", "text": "thinking"}],
        "encrypted_content": "ENC",
    }
    assert sent[2:4] == [
        {"type": "function_call", "call_id": c.id, "name": "look", "arguments": c.raw_arguments}
        for c in reply.tool_calls
    ]
    assert [i["call_id"] for i in sent[4:]] == [c.id for c in reply.tool_calls]
    assert all(i["type"] == "function_call_output" and "status" not in i for i in sent[4:])
