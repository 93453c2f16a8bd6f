"""Gemini pictures: image input rules, and image models asked for IMAGE output.

Image models (``gemini-2.5-flash-image`` and later) answer ``generateContent`` with
``inlineData`` parts; the pictures are decoded and sniffed, the text parts dropped.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from gigi_core.llm import (
    GEMINI_RULES,
    ImageRequest,
    ImageResponse,
    ProviderError,
    Usage,
    as_int,
    generated_image,
)

PROVIDER = "gemini"
#: Gemini's documented inline limits: PNG, JPEG, WebP; 20 MB for the whole request.
GEMINI_IMAGE_RULES = GEMINI_RULES
_ASPECTS = {"1024x1024": "1:1", "1536x1024": "3:2", "1024x1536": "2:3", "1792x1024": "16:9"}


def build_image_payload(request: ImageRequest) -> dict[str, Any]:
    """The prompt as one user turn; a ``size`` maps to the nearest documented aspect ratio."""
    config: dict[str, Any] = {"responseModalities": ["TEXT", "IMAGE"]}
    if request.count > 1:
        config["candidateCount"] = request.count
    aspect = _ASPECTS.get(request.size or "")
    if aspect:
        config["imageConfig"] = {"aspectRatio": aspect}
    payload: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": request.prompt}]}],
        "generationConfig": config,
    }
    extra = request.provider_options.get("extra_body")
    if isinstance(extra, dict):
        payload.update(extra)
    return payload


def parse_image_response(body: Any, request_id: str | None) -> ImageResponse:
    """Every ``inlineData`` picture of every candidate; none at all is an error."""

    def invalid(why: str, hint: str | None = None) -> ProviderError:
        return ProviderError(
            PROVIDER, why, error_class="invalid_response", request_id=request_id, hint=hint
        )

    if not isinstance(body, dict):
        raise invalid("the image reply is not a JSON object")
    blocked = (body.get("promptFeedback") or {}).get("blockReason")
    if blocked:
        raise ProviderError(
            PROVIDER,
            f"the prompt was blocked ({blocked})",
            error_class="bad_request",
            request_id=request_id,
            hint="ask for a different picture",
        )
    images = []
    linked = False
    for candidate in body.get("candidates") or []:
        parts = ((candidate or {}).get("content") or {}).get("parts") or []
        for part in parts:
            if not isinstance(part, dict):
                continue
            inline = part.get("inlineData")
            if isinstance(part.get("fileData"), dict):
                linked = True
            if not isinstance(inline, dict) or not isinstance(inline.get("data"), str):
                continue
            try:
                raw = base64.b64decode(inline["data"], validate=True)
            except (binascii.Error, ValueError):
                raise invalid("an image in the reply is not valid base64") from None
            images.append(generated_image(PROVIDER, raw))
    if not images:
        if linked:
            raise invalid("the image reply holds a link instead of the picture")
        raise invalid(
            "the reply holds no picture",
            hint="use an image model (e.g. gemini-2.5-flash-image) for the image purpose",
        )
    meta = body.get("usageMetadata") if isinstance(body.get("usageMetadata"), dict) else {}
    return ImageResponse(
        provider=PROVIDER,
        model=body.get("modelVersion") if isinstance(body.get("modelVersion"), str) else None,
        images=images,
        usage=Usage(
            input_tokens=as_int(meta.get("promptTokenCount")),
            output_tokens=as_int(meta.get("candidatesTokenCount")),
            total_tokens=as_int(meta.get("totalTokenCount")),
        ),
        request_id=request_id,
    )
