"""The ``gemini`` provider: URLs, auth header and embeddings; shaping lives in request/response.

The key goes in ``x-goog-api-key``, never in ``?key=``: URLs end up in error messages
and logs (the owned client names the URL it could not reach), headers do not.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

from gigi_core.llm import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    ImageRequest,
    ImageResponse,
    ModelInfo,
    Provider,
    ProviderError,
    Supports,
    check_request_images,
)
from gigi_gemini.images import GEMINI_IMAGE_RULES, build_image_payload, parse_image_response
from gigi_gemini.request import PROVIDER, build_generate_payload
from gigi_gemini.response import parse_generate_response

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
_TASK_TYPES = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}


class GeminiProvider(Provider):
    """Google's Gemini API (AI Studio keys); model ids like ``gemini-2.5-flash``.

    A base URL may be given with or without the ``/v1beta`` suffix (proxies differ).
    """

    name = PROVIDER
    description = "Google Gemini (generateContent, batchEmbedContents, image models)"
    supports = Supports(
        tools=True,
        structured_output=True,
        embeddings=True,
        images=True,
        reasoning=True,
        image_generation=True,
    )
    default_base_url = GEMINI_BASE_URL

    def model_path(self, model: str) -> str:
        """``models/{id}`` (or ``tunedModels/{id}``), the id URL-quoted: ids are free strings."""
        for prefix in ("models/", "tunedModels/"):
            if model.startswith(prefix):
                rest = model[len(prefix) :]
                break
        else:
            prefix, rest = "models/", model
        if not rest.strip():
            raise ProviderError(
                self.name,
                f"model {model!r} names no model",
                error_class="config",
                hint="use a Gemini model id such as gemini-2.5-flash",
            )
        return prefix + quote(rest, safe="-._~@")

    def method_url(self, base_url: str | None, model: str, method: str) -> str:
        """``{base}/v1beta/{model_path}:{method}``."""
        base = self.base_url_for(base_url)
        if not base.endswith(f"/{API_VERSION}"):
            base = f"{base}/{API_VERSION}"
        return f"{base}/{self.model_path(model)}:{method}"

    def headers(self, api_key: str) -> dict[str, str]:
        """The key as a header (never in the URL)."""
        return {"x-goog-api-key": api_key} if api_key else {}

    async def list_models(self, *, api_key: str, base_url: str | None = None) -> list[ModelInfo]:
        """``GET /v1beta/models``, every page (``gigi_gemini.models``)."""
        from gigi_gemini.models import list_models

        base = self.base_url_for(base_url)
        if not base.endswith(f"/{API_VERSION}"):
            base = f"{base}/{API_VERSION}"
        return await list_models(self.http, self.name, f"{base}/models", self.headers(api_key))

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        check_request_images(self.name, request, GEMINI_IMAGE_RULES)
        reply = await self.http.post_json(
            self.method_url(base_url, request.model, "generateContent"),
            build_generate_payload(request),
            provider=self.name,
            headers=self.headers(api_key),
            read_timeout=request.timeout,
        )
        return parse_generate_response(reply.body, reply.request_id, list(request.tools))

    async def generate_images(
        self, request: ImageRequest, *, api_key: str, base_url: str | None = None
    ) -> ImageResponse:
        """An image model's ``generateContent`` asked for IMAGE output (``gigi_gemini.images``)."""
        reply = await self.http.post_json(
            self.method_url(base_url, request.model, "generateContent"),
            build_image_payload(request),
            provider=self.name,
            headers=self.headers(api_key),
            read_timeout=request.timeout or 120.0,
        )
        return parse_image_response(reply.body, reply.request_id)

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        reply = await self.http.post_json(
            self.method_url(base_url, request.model, "batchEmbedContents"),
            build_embed_payload(request, self.model_path(request.model)),
            provider=self.name,
            headers=self.headers(api_key),
            read_timeout=request.timeout,
        )
        return parse_embeddings(reply.body, request, reply.request_id)


def build_embed_payload(request: EmbeddingRequest, model_path: str) -> dict[str, Any]:
    """One ``EmbedContentRequest`` per input; each must name the model again."""
    entries: list[dict[str, Any]] = []
    task = request.provider_options.get("task_type") or _TASK_TYPES.get(request.purpose or "")
    for text in request.inputs:
        entry: dict[str, Any] = {"model": model_path, "content": {"parts": [{"text": text}]}}
        if task:
            entry["taskType"] = task
        if request.dimensions is not None:
            entry["outputDimensionality"] = request.dimensions
        entries.append(entry)
    return {"requests": entries}


def parse_embeddings(
    body: Any, request: EmbeddingRequest, request_id: str | None
) -> EmbeddingResponse:
    """Vectors in input order; a count or dimension mismatch is an invalid response.

    A requested dimension the model ignored fails here rather than later, when a
    vector column of the wrong width would reject it far from the cause.
    """

    def invalid(why: str) -> ProviderError:
        return ProviderError(PROVIDER, why, error_class="invalid_response", request_id=request_id)

    items = body.get("embeddings") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise invalid("the embeddings reply has no embeddings")
    vectors: list[list[float]] = []
    for item in items:
        values = item.get("values") if isinstance(item, dict) else None
        if not isinstance(values, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        ):
            raise invalid("an embedding is not a list of finite numbers")
        vectors.append([float(v) for v in values])
    if len(vectors) != len(request.inputs):
        raise invalid(f"expected {len(request.inputs)} embeddings, got {len(vectors)}")
    dimensions = {len(v) for v in vectors}
    if len(dimensions) != 1 or 0 in dimensions:
        raise invalid(f"embeddings have inconsistent dimensions {sorted(dimensions)}")
    dimension = dimensions.pop()
    if request.dimensions is not None and dimension != request.dimensions:
        raise invalid(f"asked for {request.dimensions} dimensions, the model returned {dimension}")
    return EmbeddingResponse(
        provider=PROVIDER,
        model=request.model,
        vectors=vectors,
        dimension=dimension,
        request_id=request_id,
    )
