"""What an image really is, read from its header bytes: type, dimensions, animation.

A file's name and its claimed content type are untrusted; providers reject what they
cannot decode, so Gigi refuses it first with a reason. Only headers are read (no pixel
decoding, so no imaging library): PNG, JPEG, GIF and WebP, the types every vision API takes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from gigi_core.errors import GigiError

SUPPORTED_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


class ImageRejected(GigiError):
    """The bytes are not an image Gigi can send (not one at all, animated, too large)."""


@dataclass(frozen=True)
class ImageInfo:
    """An image's sniffed facts: what may be logged and stored (never its bytes)."""

    media_type: str
    width: int
    height: int
    animated: bool
    size: int

    def as_dict(self) -> dict[str, object]:
        """For run traces and audit metadata."""
        return {
            "media_type": self.media_type,
            "width": self.width,
            "height": self.height,
            "animated": self.animated,
            "size": self.size,
        }


def sniff(data: bytes, *, name: str = "the image") -> ImageInfo:
    """The image's type and dimensions from its header; ``ImageRejected`` if it is none."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            return _png(data)
        if data.startswith(b"\xff\xd8\xff"):
            return _jpeg(data)
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return _gif(data)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp(data)
    except (struct.error, IndexError, ValueError):
        pass
    else:
        raise ImageRejected(
            f"{name} is not a PNG, JPEG, GIF or WebP image",
            hint="attach a PNG, JPEG, GIF or WebP picture (the file's name does not decide)",
        )
    raise ImageRejected(
        f"{name} looks like an image but its header is broken",
        hint="save the picture again as PNG or JPEG and attach that",
    )


def _png(data: bytes) -> ImageInfo:
    if data[12:16] != b"IHDR":
        raise ValueError("no IHDR")
    width, height = struct.unpack(">II", data[16:24])
    animated = False
    pos = 8
    while pos + 8 <= len(data):  # an acTL chunk before the image data means APNG
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"acTL":
            animated = True
            break
        if kind == b"IDAT":
            break
        pos += 12 + length
    return _info("image/png", width, height, animated, data)


def _jpeg(data: bytes) -> ImageInfo:
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            raise ValueError("bad marker")
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        if marker in _JPEG_SOF:
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            return _info("image/jpeg", width, height, False, data)
        pos += 2 + length
    raise ValueError("no frame header")


def _gif(data: bytes) -> ImageInfo:
    width, height, flags = struct.unpack("<HHB", data[6:11])
    pos = 13 + (3 * 2 ** ((flags & 7) + 1) if flags & 0x80 else 0)
    frames = 0
    while pos < len(data) and frames < 2:
        block = data[pos]
        if block == 0x3B:  # trailer
            break
        if block == 0x21:  # extension: label, then sub-blocks
            pos = _skip_sub_blocks(data, pos + 2)
        elif block == 0x2C:  # image descriptor
            frames += 1
            local = data[pos + 9]
            pos += 10 + (3 * 2 ** ((local & 7) + 1) if local & 0x80 else 0)
            pos = _skip_sub_blocks(data, pos + 1)  # LZW minimum code size, then data
        else:
            raise ValueError("bad block")
    if frames == 0:
        raise ValueError("no frame")
    return _info("image/gif", width, height, frames > 1, data)


def _skip_sub_blocks(data: bytes, pos: int) -> int:
    while True:
        size = data[pos]
        pos += 1 + size
        if size == 0:
            return pos


def _webp(data: bytes) -> ImageInfo:
    kind = data[12:16]
    if kind == b"VP8X":
        flags = data[20]
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return _info("image/webp", width, height, bool(flags & 0x02), data)
    if kind == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            raise ValueError("bad VP8 frame")
        width, height = struct.unpack("<HH", data[26:30])
        return _info("image/webp", width & 0x3FFF, height & 0x3FFF, False, data)
    if kind == b"VP8L":
        if data[20] != 0x2F:
            raise ValueError("bad VP8L signature")
        bits = int.from_bytes(data[21:25], "little")
        return _info("image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, False, data)
    raise ValueError("unknown WebP chunk")


def _info(media_type: str, width: int, height: int, animated: bool, data: bytes) -> ImageInfo:
    if width <= 0 or height <= 0:
        raise ValueError("empty image")
    return ImageInfo(media_type, width, height, animated, len(data))


sniff_image = sniff  # the public name (``gigi_core.llm.sniff_image``)
