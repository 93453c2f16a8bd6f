"""Gemini pictures: inline image input checked against its rules, image models' inlineData."""

from __future__ import annotations

import pytest
from gemini_fakes import API_KEY
from gigi_gemini import GeminiProvider

from gigi_core.llm import ChatRequest, ImagePart, ImageRequest, ProviderError, TextPart, UserMessage
from gigi_core.testing.fake_providers import FakeGemini, png_bytes


def _vision(part: ImagePart, model: str = "gemini-2.5-flash") -> ChatRequest:
    return ChatRequest(model=model, messages=[UserMessage(content=[TextPart(text="?"), part])])


async def test_gif_input_is_refused_since_gemini_takes_none(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    gif = (
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
    )
    with pytest.raises(ProviderError, match="image/gif, which is not accepted"):
        await gemini.chat(
            _vision(ImagePart.from_bytes(gif, "image/gif")), api_key=API_KEY, base_url=fake.base_url
        )
    assert fake.requests == []


async def test_a_text_only_model_refuses_images(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.text_only_models = frozenset({"gemma-text"})
    with pytest.raises(ProviderError, match="Image input modality is not enabled"):
        await gemini.chat(
            _vision(ImagePart.from_bytes(png_bytes()), "gemma-text"),
            api_key=API_KEY,
            base_url=fake.base_url,
        )


async def test_an_image_model_answers_with_inline_data(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    picture = png_bytes(5, 6)
    fake.reply_image(picture)
    reply = await gemini.generate_images(
        ImageRequest(model="gemini-2.5-flash-image", prompt="a fox", size="1536x1024"),
        api_key=API_KEY,
        base_url=fake.base_url,
    )
    assert [(i.data, i.width, i.height) for i in reply.images] == [(picture, 5, 6)]
    body = fake.last_request.json
    assert body["generationConfig"]["responseModalities"] == ["TEXT", "IMAGE"]
    assert body["generationConfig"]["imageConfig"] == {"aspectRatio": "3:2"}
    assert fake.last_request.path.endswith("gemini-2.5-flash-image:generateContent")


async def test_a_reply_without_a_picture_is_an_error_naming_image_models(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_text("I can only describe it in words.")
    with pytest.raises(ProviderError, match="holds no picture") as err:
        await gemini.generate_images(
            ImageRequest(model="gemini-2.5-flash", prompt="x"),
            api_key=API_KEY,
            base_url=fake.base_url,
        )
    assert "image model" in (err.value.hint or "")


async def test_a_broken_inline_picture_is_refused(gemini: GeminiProvider, fake: FakeGemini) -> None:
    fake.reply_image(b"\x89PNG\r\n\x1a\nbroken")
    with pytest.raises(ProviderError, match="header is broken"):
        await gemini.generate_images(
            ImageRequest(model="gemini-2.5-flash-image", prompt="x"),
            api_key=API_KEY,
            base_url=fake.base_url,
        )
