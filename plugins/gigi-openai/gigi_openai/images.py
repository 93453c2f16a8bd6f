"""OpenAI image generation: ``POST /images/generations`` with the pictures as ``b64_json``.

A reply that carries a ``url`` instead of bytes is refused rather than fetched: Gigi
downloads nothing a provider points at, and DALL-E links expire within the hour.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from gigi_core.llm import (
    ImageRequest,
    ImageResponse,
    LlmHttpClient,
    ProviderError,
    Usage,
    as_int,
    generated_image,
)


def build_images_payload(request: ImageRequest, model: str) -> dict[str, Any]:
    """The body: gpt-image models always answer in base64; DALL-E must be asked to."""
    payload: dict[str, Any] = {"model": model, "prompt": request.prompt, "n": request.count}
    if request.size:
        payload["size"] = request.size
    if model.startswith("dall-e"):
        payload["response_format"] = "b64_json"
    extra = request.provider_options.get("extra_body")
    if isinstance(extra, dict):
        payload.update(extra)
    return payload


def parse_images(body: Any, provider: str, request_id: str | None) -> ImageResponse:
    """Decode every ``b64_json`` picture and sniff it; a URL or broken bytes is an error."""

    def invalid(why: str, hint: str | None = None) -> ProviderError:
        return ProviderError(
            provider, why, error_class="invalid_response", request_id=request_id, hint=hint
        )

    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not data:
        raise invalid("the image reply has no pictures")
    images = []
    for item in data:
        encoded = item.get("b64_json") if isinstance(item, dict) else None
        if not isinstance(encoded, str):
            if isinstance(item, dict) and item.get("url"):
                raise invalid(
                    "the image reply holds a link instead of the picture",
                    hint="use a gpt-image model, or a DALL-E model with b64_json output",
                )
            raise invalid("an image in the reply has no b64_json")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise invalid("an image in the reply is not valid base64") from None
        images.append(generated_image(provider, raw))
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return ImageResponse(
        provider=provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        images=images,
        usage=Usage(
            input_tokens=as_int(usage.get("input_tokens")),
            output_tokens=as_int(usage.get("output_tokens")),
            total_tokens=as_int(usage.get("total_tokens")),
        ),
        request_id=request_id,
        revised_prompt=any(isinstance(d, dict) and d.get("revised_prompt") for d in data),
    )


async def generate_images(
    http: LlmHttpClient,
    provider: str,
    base: str,
    headers: dict[str, str],
    request: ImageRequest,
    model: str,
) -> ImageResponse:
    """One call to the images endpoint (retries and error text from the owned client)."""
    reply = await http.post_json(
        f"{base}/images/generations",
        build_images_payload(request, model),
        provider=provider,
        headers=headers,
        read_timeout=request.timeout or 120.0,
    )
    return parse_images(reply.body, provider, reply.request_id)
