"""Anthropic image input: its documented 5 MB and 8000 px limits are checked before sending."""

from __future__ import annotations

import pytest
from anthropic_fake_extras import API_KEY
from gigi_anthropic import AnthropicProvider

from gigi_core.llm import ChatRequest, ImagePart, ProviderError, TextPart, UserMessage
from gigi_core.testing.fake_providers import FakeAnthropic, png_bytes


def _vision(part: ImagePart) -> ChatRequest:
    return ChatRequest(
        model="claude-sonnet-4-5", messages=[UserMessage(content=[TextPart(text="?"), part])]
    )


async def test_a_png_goes_as_a_base64_source(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_text("a square")
    part = ImagePart.from_bytes(png_bytes())
    await anthropic.chat(_vision(part), api_key=API_KEY, base_url=fake.base_url)
    block = fake.last_request.json["messages"][0]["content"][1]
    assert block["source"]["type"] == "base64"
    assert block["source"]["media_type"] == "image/png"


async def test_over_8000_pixels_a_side_is_refused_before_sending(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    with pytest.raises(ProviderError, match="8001x1 pixels; the limit is 8000") as err:
        await anthropic.chat(
            _vision(ImagePart.from_bytes(png_bytes(8001, 1))),
            api_key=API_KEY,
            base_url=fake.base_url,
        )
    assert "scale it down" in (err.value.hint or "")
    assert fake.requests == []


async def test_anthropic_has_no_image_generation(anthropic: AnthropicProvider) -> None:
    from gigi_core.llm import ImageRequest

    assert anthropic.supports.image_generation is False
    with pytest.raises(ProviderError, match="does not support image generation"):
        await anthropic.generate_images(ImageRequest(model="m", prompt="x"), api_key=API_KEY)
