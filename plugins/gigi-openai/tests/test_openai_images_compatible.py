"""Image parts to OpenRouter, OpenAI-compatible servers and the Responses API, on the fakes:
the picture arrives as a data URL the server decodes, OpenAI's limits are checked before the
upload, and a model that takes no pictures answers with an error the member can read."""

from __future__ import annotations

import base64

import pytest
from gigi_openai import OpenAICompatibleProvider, OpenAIProvider, OpenRouterProvider

from gigi_core.llm import ChatRequest, ImagePart, ProviderError, TextPart, UserMessage
from gigi_core.testing.fake_providers import FakeOpenAI, FakeOpenRouter, png_bytes

MB = 1024 * 1024


def _vision(part: ImagePart, model: str) -> ChatRequest:
    return ChatRequest(
        model=model, messages=[UserMessage(content=[TextPart(text="what is this?"), part])]
    )


def _sent_picture(body: dict, key: str = "messages") -> bytes:
    content = body[key][-1]["content"]
    [url] = [
        p["image_url"]["url"] if p["type"] == "image_url" else p["image_url"]
        for p in content
        if p["type"] in ("image_url", "input_image")
    ]
    assert url.startswith("data:image/png;base64,")
    return base64.b64decode(url.partition(",")[2])


async def test_openrouter_sends_the_picture_as_an_image_url_part(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    picture = png_bytes(5, 3)
    router.reply_text("a wide grey picture")
    reply = await openrouter.chat(
        _vision(ImagePart.from_bytes(picture), "openrouter/openai/gpt-4o"),
        api_key="or-test",
        base_url=router.base_url,
    )
    assert reply.text == "a wide grey picture"
    [sent] = router.requests_to("chat")
    assert sent.json["model"] == "openai/gpt-4o"
    assert sent.json["messages"][-1]["content"][0] == {"type": "text", "text": "what is this?"}
    assert _sent_picture(sent.json) == picture


async def test_openrouter_text_only_model_refusal_is_readable(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    router.text_only_models = frozenset({"mistralai/mistral-7b-instruct"})
    with pytest.raises(ProviderError) as err:
        await openrouter.chat(
            _vision(ImagePart.from_bytes(png_bytes()), "mistralai/mistral-7b-instruct"),
            api_key="or-test",
            base_url=router.base_url,
        )
    assert err.value.status == 400 and err.value.error_class == "bad_request"
    assert "image_url is only supported by certain models" in err.value.provider_message


async def test_a_compatible_server_gets_the_picture_and_openai_limits_hold(
    compatible: OpenAICompatibleProvider, fake: FakeOpenAI
) -> None:
    picture = png_bytes(4, 4)
    fake.reply_text("a square")
    await compatible.chat(
        _vision(ImagePart.from_bytes(picture), "llava:13b"),
        api_key="sk-test",
        base_url=fake.base_url,
    )
    assert _sent_picture(fake.requests_to("chat")[0].json) == picture

    over = png_bytes() + b"\x00" * (20 * MB)  # a valid PNG header, 20 MB and a bit
    with pytest.raises(ProviderError, match="image 1 is 20.0 MB; the limit is 20.0 MB") as err:
        await compatible.chat(
            _vision(ImagePart.from_bytes(over), "llava:13b"),
            api_key="sk-test",
            base_url=fake.base_url,
        )
    assert "smaller picture" in (err.value.hint or "")
    assert len(fake.requests) == 1  # the oversized one never left


async def test_responses_api_carries_the_picture_and_the_refusal(fake: FakeOpenAI) -> None:
    openai = OpenAIProvider(api="responses")
    picture = png_bytes(2, 5)
    fake.reply_response(text="a tall grey picture")
    reply = await openai.chat(
        _vision(ImagePart.from_bytes(picture), "gpt-4o"), api_key="sk-test", base_url=fake.base_url
    )
    assert reply.text == "a tall grey picture"
    [sent] = fake.requests_to("responses")
    assert _sent_picture(sent.json, "input") == picture

    fake.text_only_models = frozenset({"gpt-3.5-turbo"})
    with pytest.raises(ProviderError) as err:
        await openai.chat(
            _vision(ImagePart.from_bytes(picture), "gpt-3.5-turbo"),
            api_key="sk-test",
            base_url=fake.base_url,
        )
    assert err.value.error_class == "bad_request"
    assert "only supported by certain models" in err.value.provider_message
