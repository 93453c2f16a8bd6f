"""Request shaping, asserted on what the fake Gemini server actually received."""

from __future__ import annotations

from typing import Any

import pytest
from gemini_fakes import API_KEY
from gigi_gemini import GeminiProvider

from gigi_core.llm import (
    ChatRequest,
    ImagePart,
    NamedToolChoice,
    ProviderError,
    StructuredOutput,
    SystemMessage,
    TextPart,
    Tool,
    UserMessage,
)
from gigi_core.testing.fake_providers import FakeGemini, png_bytes

WEATHER = Tool(
    name="get_weather",
    description="Weather for a city",
    parameters={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
)


def _request(**kw: Any) -> ChatRequest:
    base: dict[str, Any] = {
        "model": "gemini-2.5-flash",
        "messages": [SystemMessage(content="You are Gigi."), UserMessage(content="hi")],
    }
    base.update(kw)
    return ChatRequest(**base)


async def _sent(provider: GeminiProvider, fake: FakeGemini, request: ChatRequest) -> dict:
    fake.reply_text("ok")
    await provider.chat(request, api_key=API_KEY, base_url=fake.base_url)
    return fake.last_request.json


async def test_system_instruction_roles_path_and_key_header(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    body = await _sent(gemini, fake, _request())
    assert body["systemInstruction"] == {"parts": [{"text": "You are Gigi."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    sent = fake.last_request
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == API_KEY
    assert sent.query == {} and API_KEY not in sent.path
    assert "tools" not in body and "toolConfig" not in body and "generationConfig" not in body


async def test_model_prefix_and_v1beta_base_url_are_accepted(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_text("ok")
    request = _request(model="models/gemini-3-pro-preview")
    await gemini.chat(request, api_key=API_KEY, base_url=fake.base_url + "/v1beta/")
    assert fake.last_request.path == "/v1beta/models/gemini-3-pro-preview:generateContent"


async def test_tools_use_full_json_schema(gemini: GeminiProvider, fake: FakeGemini) -> None:
    body = await _sent(gemini, fake, _request(tools=[WEATHER]))
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parametersJsonSchema": WEATHER.parameters,
                }
            ]
        }
    ]
    assert "toolConfig" not in body


async def test_openapi_schema_style_strips_unsupported_keywords(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    request = _request(tools=[WEATHER], provider_options={"schema_style": "openapi"})
    body = await _sent(gemini, fake, request)
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert "parametersJsonSchema" not in declaration
    assert declaration["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "nullable": True}},
        "required": ["city"],
    }


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        (
            NamedToolChoice(name="get_weather"),
            {"mode": "ANY", "allowedFunctionNames": ["get_weather"]},
        ),
    ],
)
async def test_each_tool_choice_mapping(
    gemini: GeminiProvider, fake: FakeGemini, choice: Any, config: dict
) -> None:
    body = await _sent(gemini, fake, _request(tools=[WEATHER], tool_choice=choice))
    assert body["toolConfig"] == {"functionCallingConfig": config}


@pytest.mark.parametrize(
    ("model", "effort", "thinking"),
    [
        ("gemini-2.5-flash", "none", {"thinkingBudget": 0}),
        ("gemini-2.5-flash", "low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("gemini-2.5-pro", "high", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("gemini-3-pro-preview", "low", {"thinkingLevel": "low", "includeThoughts": True}),
        ("gemini-3-flash", "xhigh", {"thinkingLevel": "high", "includeThoughts": True}),
        ("gemini-3-flash", "minimal", {"thinkingLevel": "minimal", "includeThoughts": True}),
    ],
)
async def test_reasoning_effort_maps_to_thinking_config(
    gemini: GeminiProvider, fake: FakeGemini, model: str, effort: str, thinking: dict
) -> None:
    request = _request(model=model, reasoning_effort=effort, max_output_tokens=300)
    body = await _sent(gemini, fake, request)
    assert body["generationConfig"] == {"maxOutputTokens": 300, "thinkingConfig": thinking}


async def test_thinking_style_override(gemini: GeminiProvider, fake: FakeGemini) -> None:
    request = _request(
        model="my-proxy-alias", reasoning_effort="medium", provider_options={"thinking": "budget"}
    )
    body = await _sent(gemini, fake, request)
    assert body["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 8192


async def test_images_inline_and_file_data(gemini: GeminiProvider, fake: FakeGemini) -> None:
    inline = ImagePart.from_bytes(png_bytes(), "image/png")
    message = UserMessage(
        content=[TextPart(text="compare"), ImagePart(url="https://example.com/a.jpg"), inline]
    )
    body = await _sent(gemini, fake, _request(messages=[message]))
    _media, data = inline.inline_data() or ("", "")
    assert body["contents"][0]["parts"] == [
        {"text": "compare"},
        {"fileData": {"fileUri": "https://example.com/a.jpg", "mimeType": "image/jpeg"}},
        {"inlineData": {"mimeType": "image/png", "data": data}},
    ]
    assert "systemInstruction" not in body


async def test_structured_output_json_schema(gemini: GeminiProvider, fake: FakeGemini) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    out = StructuredOutput(schema=schema, name="count")
    body = await _sent(gemini, fake, _request(structured_output=out, temperature=0.1))
    assert body["generationConfig"] == {
        "temperature": 0.1,
        "responseMimeType": "application/json",
        "responseJsonSchema": schema,
    }
    legacy = _request(structured_output=out, provider_options={"schema_style": "openapi"})
    body = await _sent(gemini, fake, legacy)
    assert body["generationConfig"]["responseSchema"] == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }


async def test_generation_config_and_extra_body_merge(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    request = _request(
        provider_options={
            "generation_config": {"topK": 3},
            "extra_body": {"safetySettings": safety},
        }
    )
    body = await _sent(gemini, fake, request)
    assert body["generationConfig"] == {"topK": 3} and body["safetySettings"] == safety


async def test_empty_model_is_a_config_error(gemini: GeminiProvider) -> None:
    with pytest.raises(ProviderError) as info:
        await gemini.chat(_request(model="models/"), api_key=API_KEY)
    assert info.value.error_class == "config"
