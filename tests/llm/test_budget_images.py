"""Budgets hold a picture in a prompt at a fixed estimate (``IMAGE_TOKENS``), not by its
base64 bytes: a 100 KB picture is about 1,600 tokens, not 45,000. Text is estimated from
its bytes as before. Both backends; a fake OpenAI on loopback."""

from __future__ import annotations

from gigi_core import Actor
from gigi_core.llm import ChatRequest, ImagePart, TextPart, UserMessage
from gigi_core.llm.budget_cost import IMAGE_TOKENS, most_tokens
from gigi_core.testing.fake_providers import FakeOpenAI, png_bytes
from tests.llm.budget_helpers import GUILD, MAX_OUT, configure, counters, usage_of
from tests.llm.service_helpers import llm_kernel

KB = 1024


def _picture(size: int) -> ImagePart:
    """A PNG (it sniffs as one) padded to ``size`` bytes."""
    head = png_bytes()
    return ImagePart.from_bytes(head + b"\x00" * (size - len(head)))


def _request(*parts: ImagePart) -> ChatRequest:
    content = [TextPart(text="what is in these pictures?"), *parts]
    return ChatRequest(
        model="m-1", messages=[UserMessage(content=content)], max_output_tokens=MAX_OUT
    )


def test_each_picture_counts_the_fixed_estimate_whatever_its_size() -> None:
    text_only = most_tokens(_request())
    assert most_tokens(_request(_picture(100 * KB))) == text_only + IMAGE_TOKENS
    assert most_tokens(_request(_picture(KB))) == text_only + IMAGE_TOKENS
    two = most_tokens(_request(_picture(100 * KB), _picture(300 * KB)))
    assert two == text_only + 2 * IMAGE_TOKENS
    remote = ImagePart(url="https://example.org/cat.png")
    assert most_tokens(_request(remote)) == text_only + IMAGE_TOKENS
    # text still counts by its bytes
    longer = ChatRequest(
        model="m-1",
        messages=[UserMessage(content=[TextPart(text="x" * 3000)])],
        max_output_tokens=MAX_OUT,
    )
    assert most_tokens(longer) >= 1000 + MAX_OUT


async def test_a_picture_fits_a_budget_its_base64_would_not(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        request = _request(_picture(100 * KB))
        most = most_tokens(request)
        assert most < 2 * IMAGE_TOKENS + MAX_OUT  # ~45,000 if the base64 were counted
        await kernel.llm.set_budget(GUILD, "guild", None, limit=most + 10)
        fake.reply_text("a cat", usage=usage_of(IMAGE_TOKENS + 20))
        reply = await kernel.llm.chat(request, guild_id=GUILD, actor=Actor(id="u1"))
        assert reply.text == "a cat"
        assert await counters(kernel) == (IMAGE_TOKENS + 20, 0)  # settled at what was billed
