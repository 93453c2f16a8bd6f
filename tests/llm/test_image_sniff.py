"""Image headers decide what a file is: type, dimensions, animation; names and claims do not."""

from __future__ import annotations

import base64
import struct

import pytest

from gigi_core.llm import (
    ANTHROPIC_RULES,
    ChatRequest,
    ImagePart,
    ImageRejected,
    ImageRules,
    ProviderError,
    TextPart,
    UserMessage,
    accepts_images,
    check_image,
    check_request_images,
    sniff_image,
)
from gigi_core.llm.records import Owner, Resolution, purpose_chain
from gigi_core.testing.fake_providers import png_bytes


def _gif(frames: int, width: int = 3, height: int = 2) -> bytes:
    head = b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0)
    frame = b"\x21\xf9\x04\x00\x0a\x00\x00\x00" + b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0)
    frame += b"\x02\x02\x44\x01\x00"
    return head + frame * frames + b"\x3b"


def _jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def _webp_vp8x(width: int, height: int, animated: bool) -> bytes:
    flags = 0x02 if animated else 0
    chunk = b"VP8X" + struct.pack("<I", 10) + bytes([flags, 0, 0, 0])
    chunk += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def test_sniff_reads_type_and_dimensions_of_each_format() -> None:
    assert sniff_image(png_bytes(7, 5)).as_dict() == {
        "media_type": "image/png",
        "width": 7,
        "height": 5,
        "animated": False,
        "size": len(png_bytes(7, 5)),
    }
    jpeg = sniff_image(_jpeg(640, 480))
    assert (jpeg.media_type, jpeg.width, jpeg.height) == ("image/jpeg", 640, 480)
    gif = sniff_image(_gif(1))
    assert (gif.media_type, gif.width, gif.height, gif.animated) == ("image/gif", 3, 2, False)
    webp = sniff_image(_webp_vp8x(300, 200, animated=False))
    assert (webp.media_type, webp.width, webp.height) == ("image/webp", 300, 200)


def test_animation_is_detected_in_gif_and_webp() -> None:
    assert sniff_image(_gif(3)).animated is True
    assert sniff_image(_webp_vp8x(10, 10, animated=True)).animated is True
    with pytest.raises(ImageRejected, match="animated") as err:
        check_image(_gif(2), ImageRules(), name="cat.gif")
    assert "still picture" in (err.value.hint or "")


def test_a_png_name_on_text_bytes_is_refused_by_its_content() -> None:
    with pytest.raises(ImageRejected, match="photo.png is not a PNG, JPEG, GIF or WebP"):
        check_image(b"#!/bin/sh\necho hi\n", ImageRules(), name="photo.png")
    with pytest.raises(ImageRejected, match="header is broken"):
        sniff_image(b"\x89PNG\r\n\x1a\n\x00\x00")


def test_huge_dimensions_and_sizes_are_refused_naming_the_limit() -> None:
    with pytest.raises(ImageRejected, match="9000x10 pixels; the limit is 8000"):
        check_image(png_bytes(9000, 10), ANTHROPIC_RULES, name="wide.png")
    with pytest.raises(ImageRejected, match="the limit is 0.0 MB"):
        check_image(png_bytes(), ImageRules(max_bytes=10), name="x.png")
    with pytest.raises(ImageRejected, match="image/gif, which is not accepted"):
        check_image(_gif(1), ImageRules(types=("image/png",)), name="x.gif")


def _request(*parts: ImagePart) -> ChatRequest:
    return ChatRequest(model="m", messages=[UserMessage(content=[TextPart(text="hi"), *parts])])


def test_request_check_refuses_mislabelled_and_broken_inline_images() -> None:
    check_request_images("p", _request(ImagePart.from_bytes(png_bytes())), ANTHROPIC_RULES)
    check_request_images("p", _request(ImagePart(url="https://x/y.png")), ANTHROPIC_RULES)
    with pytest.raises(ProviderError, match="labelled image/jpeg but is image/png"):
        check_request_images(
            "p", _request(ImagePart.from_bytes(png_bytes(), "image/jpeg")), ANTHROPIC_RULES
        )
    broken = ImagePart(url="data:image/png;base64," + base64.b64encode(b"nope").decode())
    with pytest.raises(ProviderError, match="image 1 is not a PNG") as err:
        check_request_images("anthropic", _request(broken), ANTHROPIC_RULES)
    assert err.value.error_class == "bad_request"
    many = [ImagePart.from_bytes(png_bytes())] * 3
    with pytest.raises(ProviderError, match="3 images in one request; p takes at most 2"):
        check_request_images("p", _request(*many), ImageRules(max_images=2))


def test_image_part_size_and_type_come_from_the_data_url() -> None:
    data = png_bytes(4, 4)
    part = ImagePart.from_bytes(data)
    assert (part.size(), part.media_type()) == (len(data), "image/png")
    assert ImagePart(url="https://x/a.png").size() is None


def _resolution(purpose: str, params: dict[str, object]) -> Resolution:
    return Resolution(
        owner=Owner.guild("g"),
        purpose=purpose,
        provider="p",
        model="m",
        fallback_model=None,
        credential_id="c",
        credential_label="l",
        base_url=None,
        params=params,
    )


class _Prov:
    def __init__(self, images: bool) -> None:
        self.supports = type("S", (), {"images": images})()


def test_vision_falls_back_to_chat_and_image_has_no_fallback() -> None:
    assert purpose_chain("vision") == ("vision", "chat")
    assert purpose_chain("image") == ("image",)


def test_a_profile_param_decides_image_input_before_the_provider_default() -> None:
    assert accepts_images(_resolution("chat", {}), _Prov(True)) is True  # type: ignore[arg-type]
    assert accepts_images(_resolution("chat", {}), _Prov(False)) is False  # type: ignore[arg-type]
    assert accepts_images(_resolution("chat", {"images": False}), _Prov(True)) is False  # type: ignore[arg-type]
    assert accepts_images(_resolution("vision", {}), _Prov(False)) is True  # type: ignore[arg-type]
