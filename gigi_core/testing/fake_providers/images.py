"""Pictures for the fake servers: tiny real images, and wire checks on image parts.

The fakes refuse what the real APIs refuse (a part that is not an image, a model that
takes no images) with the vendor's own wording, so tests see the same errors Gigi would.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from collections.abc import Iterable
from typing import Any


def png_bytes(width: int = 2, height: int = 2, *, marker: bytes = b"") -> bytes:
    """A valid grey PNG; ``marker`` rides in a ``tEXt`` chunk (canary tests look for it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    text = chunk(b"tEXt", b"Comment\x00" + marker) if marker else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + text
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def png_b64(**kwargs: Any) -> str:
    """``png_bytes`` in base64, as image APIs send pictures."""
    return base64.b64encode(png_bytes(**kwargs)).decode("ascii")


def data_url_problem(url: str) -> str | None:
    """Why an image ``data:`` URL would be refused (None: it decodes to a PNG/JPEG/GIF/WebP)."""
    if not url.startswith("data:"):
        return None  # remote URLs are fetched by the real service; the fake trusts them
    header, sep, payload = url.partition(";base64,")
    if not sep:
        return "Invalid image URL: expected a base64-encoded data URL."
    return inline_problem(header[len("data:") :], payload)


def inline_problem(media_type: str, payload: str) -> str | None:
    """Why base64 ``payload`` claimed as ``media_type`` is not a valid image."""
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return "Invalid base64 image data."
    kinds = {
        "image/png": raw.startswith(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg": raw.startswith(b"\xff\xd8\xff"),
        "image/gif": raw[:6] in (b"GIF87a", b"GIF89a"),
        "image/webp": raw[:4] == b"RIFF" and raw[8:12] == b"WEBP",
    }
    if media_type not in kinds:
        return f"Unsupported image media type {media_type!r}."
    if not kinds[media_type]:
        return "The image data does not match its media type; it may be corrupt."
    return None


def first_problem(problems: Iterable[str | None]) -> str | None:
    """The first refusal among ``problems``."""
    return next((p for p in problems if p), None)
