"""Limits on images: what a provider documents it accepts, and whether a model takes images.

Providers reject oversized or unsupported images with vague 400s after the upload; each
provider plugin checks its documented rules here first, so the member reads what to fix.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.image_sniff import ImageInfo, ImageRejected, sniff
from gigi_core.llm.types import ChatRequest, GeneratedImage, ImagePart, UserMessage

if TYPE_CHECKING:
    from gigi_core.llm.provider import Provider
    from gigi_core.llm.records import Resolution

MB = 1024 * 1024


@dataclass(frozen=True)
class ImageRules:
    """What one consumer accepts: types, bytes per image, total bytes, pixels per side, count."""

    types: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")
    max_bytes: int = 20 * MB
    max_total_bytes: int | None = None
    max_side: int | None = None
    max_images: int | None = None
    animated: bool = False


#: Documented limits (docs/images.md cites each provider's page).
OPENAI_RULES = ImageRules(max_bytes=20 * MB, max_total_bytes=50 * MB, max_images=500)
ANTHROPIC_RULES = ImageRules(max_bytes=5 * MB, max_side=8000, max_images=100)
GEMINI_RULES = ImageRules(
    types=("image/png", "image/jpeg", "image/webp"), max_bytes=20 * MB, max_total_bytes=20 * MB
)


def check_image(data: bytes, rules: ImageRules, *, name: str = "the image") -> ImageInfo:
    """Sniff ``data`` and hold it to ``rules``; ``ImageRejected`` names what to change."""
    if len(data) > rules.max_bytes:
        raise ImageRejected(
            f"{name} is {_mb(len(data))}; the limit is {_mb(rules.max_bytes)}",
            hint="send a smaller picture (a screenshot or a JPEG export)",
        )
    info = sniff(data, name=name)
    if info.media_type not in rules.types:
        raise ImageRejected(
            f"{name} is {info.media_type}, which is not accepted here",
            hint=f"send one of: {', '.join(rules.types)}",
        )
    if info.animated and not rules.animated:
        raise ImageRejected(
            f"{name} is animated", hint="send a still picture (one frame as PNG or JPEG)"
        )
    if rules.max_side is not None and max(info.width, info.height) > rules.max_side:
        raise ImageRejected(
            f"{name} is {info.width}x{info.height} pixels; the limit is {rules.max_side} per side",
            hint=f"scale it down to at most {rules.max_side} pixels per side",
        )
    return info


def inline_bytes(part: ImagePart) -> bytes | None:
    """The decoded bytes of a ``data:`` URL part (None for a remote URL)."""
    inline = part.inline_data()
    if inline is None:
        return None
    try:
        return base64.b64decode(inline[1], validate=True)
    except (binascii.Error, ValueError):
        return b""


def check_request_images(provider: str, request: ChatRequest, rules: ImageRules) -> None:
    """Hold every inline image of ``request`` to ``provider``'s rules before sending it.

    Raises ``ProviderError`` (``bad_request``) naming the image and the rule; remote URLs
    pass (the provider fetches them and answers for them).
    """
    parts = [
        p
        for m in request.messages
        if isinstance(m, UserMessage) and not isinstance(m.content, str)
        for p in m.content
        if isinstance(p, ImagePart)
    ]
    if not parts:
        return
    if rules.max_images is not None and len(parts) > rules.max_images:
        raise ProviderError(
            provider,
            f"{len(parts)} images in one request; {provider} takes at most {rules.max_images}",
            error_class="bad_request",
            hint="send fewer pictures at once",
        )
    total = 0
    for number, part in enumerate(parts, start=1):
        data = inline_bytes(part)
        if data is None:
            continue
        total += len(data)
        try:
            info = check_image(data, rules, name=f"image {number}")
        except ImageRejected as exc:
            raise ProviderError(
                provider, exc.message, error_class="bad_request", hint=exc.hint
            ) from None
        declared = part.media_type()
        if declared is not None and declared != info.media_type:
            raise ProviderError(
                provider,
                f"image {number} is labelled {declared} but is {info.media_type}",
                error_class="bad_request",
                hint="label the image part with its real type (ImagePart.from_bytes sniffs it)",
            )
    if rules.max_total_bytes is not None and total > rules.max_total_bytes:
        raise ProviderError(
            provider,
            f"the images add up to {_mb(total)}; the limit per request is "
            f"{_mb(rules.max_total_bytes)}",
            error_class="bad_request",
            hint="send fewer or smaller pictures",
        )


#: What a generated picture may be: any still supported type up to 20 MB.
GENERATED_RULES = ImageRules(max_bytes=20 * MB)


def generated_image(provider: str, data: bytes) -> GeneratedImage:
    """A provider's picture, sniffed: broken bytes are a ``ProviderError``, never posted."""
    try:
        info = check_image(data, GENERATED_RULES, name="the generated picture")
    except ImageRejected as exc:
        raise ProviderError(
            provider,
            exc.message,
            error_class="invalid_response",
            hint="try again; the provider sent no usable picture",
        ) from None
    return GeneratedImage(
        data=data, media_type=info.media_type, width=info.width, height=info.height
    )


def accepts_images(resolution: Resolution, provider: Provider) -> bool:
    """Whether the resolved profile's model takes image input.

    A profile's ``images`` param decides when set (``true``/``false``); a profile chosen
    for the ``vision`` purpose is taken to accept them; otherwise the provider's declared
    ``supports.images`` does (a text-only model then refuses with a readable error).
    """
    declared = resolution.params.get("images")
    if isinstance(declared, bool):
        return declared
    if resolution.purpose == "vision":
        return True
    return bool(provider.supports.images)


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB"
