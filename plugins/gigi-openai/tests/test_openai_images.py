"""Pictures over the wire: image input checks, a text-only model's refusal, images API."""

from __future__ import annotations

import base64

import pytest
from gigi_openai import OpenAIProvider

from gigi_core.llm import ChatRequest, ImagePart, ImageRequest, ProviderError, TextPart, UserMessage
from gigi_core.testing.fake_providers import FakeOpenAI, Reply, png_bytes


def _vision(part: ImagePart, model: str = "gpt-4o") -> ChatRequest:
    content = [TextPart(text="what is this?"), part]
    return ChatRequest(model=model, messages=[UserMessage(content=content)])


async def test_an_inline_png_reaches_the_wire_as_a_data_url(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    fake.reply_text("a grey square")
    part = ImagePart.from_bytes(png_bytes(3, 3))
    reply = await openai.chat(_vision(part), api_key="sk-test", base_url=fake.base_url)
    assert reply.text == "a grey square"
    sent = fake.last_request.json["messages"][0]["content"][1]
    assert sent == {"type": "image_url", "image_url": {"url": part.url}}


async def test_responses_api_sends_input_image(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_response(text="ok")
    part = ImagePart.from_bytes(png_bytes())
    request = _vision(part).model_copy(update={"provider_options": {"api": "responses"}})
    await openai.chat(request, api_key="sk-test", base_url=fake.base_url)
    content = fake.last_request.json["input"][0]["content"]
    assert {"type": "input_image", "image_url": part.url} in content


async def test_a_text_only_model_refuses_images_with_a_readable_error(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    fake.text_only_models = frozenset({"gpt-3.5-turbo"})
    part = ImagePart.from_bytes(png_bytes())
    with pytest.raises(ProviderError) as err:
        await openai.chat(_vision(part, "gpt-3.5-turbo"), api_key="sk-test", base_url=fake.base_url)
    assert err.value.status == 400
    assert "image_url is only supported by certain models" in str(err.value)


async def test_a_non_image_is_refused_before_anything_is_sent(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    fake_png = ImagePart(url="data:image/png;base64," + base64.b64encode(b"MZ\x90\x00").decode())
    with pytest.raises(ProviderError, match="image 1 is not a PNG, JPEG, GIF or WebP"):
        await openai.chat(_vision(fake_png), api_key="sk-test", base_url=fake.base_url)
    assert fake.requests == []


async def test_the_fake_refuses_a_broken_part_that_skipped_the_check(fake: FakeOpenAI) -> None:
    import httpx

    url = "data:image/png;base64," + base64.b64encode(b"not a png").decode()
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
        ],
    }
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{fake.base_url}/chat/completions",
            json=body,
            headers={"authorization": "Bearer sk-test"},
        )
    assert reply.status_code == 400
    assert "does not match its media type" in reply.json()["error"]["message"]


async def test_generation_decodes_b64_json_and_reports_usage(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    picture = png_bytes(16, 8)
    fake.reply_image(picture)
    reply = await openai.generate_images(
        ImageRequest(model="gpt-image-1", prompt="a cat", size="1024x1024"),
        api_key="sk-test",
        base_url=fake.base_url,
    )
    assert [(i.data, i.media_type, i.width, i.height) for i in reply.images] == [
        (picture, "image/png", 16, 8)
    ]
    assert reply.usage.output_tokens == 272
    sent = fake.requests_to("images")[0].json
    assert sent == {"model": "gpt-image-1", "prompt": "a cat", "n": 1, "size": "1024x1024"}


async def test_dall_e_is_asked_for_b64_json(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    await openai.generate_images(
        ImageRequest(model="dall-e-3", prompt="x"), api_key="sk-test", base_url=fake.base_url
    )
    assert fake.requests_to("images")[0].json["response_format"] == "b64_json"


async def test_a_url_instead_of_bytes_is_refused_never_fetched(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    fake.reply_image_url()
    with pytest.raises(ProviderError, match="link instead of the picture") as err:
        await openai.generate_images(
            ImageRequest(model="dall-e-3", prompt="x"), api_key="sk-test", base_url=fake.base_url
        )
    assert err.value.error_class == "invalid_response"
    assert len(fake.requests) == 1  # nothing went to the link


async def test_a_broken_picture_is_refused(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    junk = base64.b64encode(b"\x89PNG\r\n\x1a\ngarbage").decode()
    fake.enqueue(Reply(200, {"data": [{"b64_json": junk}]}, route="images"))
    with pytest.raises(ProviderError, match="header is broken"):
        await openai.generate_images(
            ImageRequest(model="gpt-image-1", prompt="x"), api_key="sk-test", base_url=fake.base_url
        )


def test_only_openai_itself_declares_image_generation() -> None:
    from gigi_openai import OpenAICompatibleProvider, OpenRouterProvider

    assert OpenAIProvider.supports.image_generation is True
    assert OpenAICompatibleProvider.supports.image_generation is False
    assert OpenRouterProvider.supports.image_generation is False
