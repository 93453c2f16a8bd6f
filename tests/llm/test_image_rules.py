"""Each provider's documented image limits, and animated PNGs, refused before an upload."""

from __future__ import annotations

import struct
import zlib

import pytest

from gigi_core.llm import (
    ANTHROPIC_RULES,
    GEMINI_RULES,
    OPENAI_RULES,
    ChatRequest,
    ImagePart,
    ImageRejected,
    ProviderError,
    TextPart,
    UserMessage,
    check_image,
    check_request_images,
    sniff_image,
)
from gigi_core.testing.fake_providers import png_bytes

MB = 1024 * 1024


def _apng() -> bytes:
    """``png_bytes`` with an ``acTL`` chunk before the image data: an animated PNG."""
    still = png_bytes(3, 3)
    actl = b"acTL" + struct.pack(">II", 2, 0)
    chunk = struct.pack(">I", 8) + actl + struct.pack(">I", zlib.crc32(actl) & 0xFFFFFFFF)
    ihdr_end = 8 + 12 + 13
    return still[:ihdr_end] + chunk + still[ihdr_end:]


def _padded(size: int) -> bytes:
    """A valid PNG header followed by padding: ``size`` bytes that sniff as a picture."""
    head = png_bytes()
    return head + b"\x00" * (size - len(head))


def _request(*data: bytes) -> ChatRequest:
    parts = [ImagePart.from_bytes(d) for d in data]
    return ChatRequest(model="m", messages=[UserMessage(content=[TextPart(text="?"), *parts])])


def test_an_animated_png_is_refused_a_still_one_passes() -> None:
    assert sniff_image(_apng()).animated is True
    assert sniff_image(png_bytes(3, 3)).animated is False
    with pytest.raises(ImageRejected, match="moving.png is animated") as err:
        check_image(_apng(), OPENAI_RULES, name="moving.png")
    assert "still picture" in (err.value.hint or "")


def test_anthropic_takes_5_mb_a_picture() -> None:
    check_request_images("anthropic", _request(_padded(5 * MB)), ANTHROPIC_RULES)
    with pytest.raises(ProviderError, match="image 1 is 5.0 MB; the limit is 5.0 MB") as err:
        check_request_images("anthropic", _request(_padded(5 * MB + 1)), ANTHROPIC_RULES)
    assert err.value.error_class == "bad_request" and "smaller" in (err.value.hint or "")


def test_openai_takes_20_mb_a_picture_and_50_mb_a_request() -> None:
    check_request_images("openai", _request(_padded(20 * MB)), OPENAI_RULES)
    with pytest.raises(ProviderError, match="image 1 is 20.0 MB; the limit is 20.0 MB"):
        check_request_images("openai", _request(_padded(20 * MB + 1)), OPENAI_RULES)
    three = _request(*[_padded(18 * MB)] * 3)
    with pytest.raises(ProviderError, match="add up to 54.0 MB; the limit per request is 50.0"):
        check_request_images("openai", three, OPENAI_RULES)


def test_gemini_takes_20_mb_inline_in_all_and_no_gif() -> None:
    two = _request(_padded(11 * MB), _padded(11 * MB))
    with pytest.raises(ProviderError, match="add up to 22.0 MB; the limit per request is 20.0"):
        check_request_images("gemini", two, GEMINI_RULES)
    assert "image/gif" not in GEMINI_RULES.types
