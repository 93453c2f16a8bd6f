"""The three providers: ``openai-compatible`` (any base URL), ``openai`` and ``openrouter``.

They share one implementation; each differs only in defaults and its ``Flavor``.
"""

from __future__ import annotations

import math
import os
from typing import Any

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
)
from gigi_openai.chat import Flavor, build_chat_payload, parse_chat_completion, parse_usage
from gigi_openai.responses import build_responses_payload, parse_responses
from gigi_openai.vision import check_images

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_PREFIX = "openrouter/"


class OpenAICompatibleProvider(Provider):
    """Any server speaking OpenAI chat completions (Ollama, vLLM, llama.cpp, LM Studio)."""

    name = "openai-compatible"
    description = "Any OpenAI-compatible endpoint (needs a base URL)"
    supports = Supports(
        tools=True, structured_output=True, embeddings=True, images=True, reasoning=True
    )
    requires_base_url = True
    flavor = Flavor(max_tokens_field="max_tokens", reasoning_style="reasoning_effort")

    def model_id(self, model: str) -> str:
        """The model id to send; free strings pass through untouched."""
        return model

    def headers(self, api_key: str) -> dict[str, str]:
        """Auth (omitted for keyless local servers) plus provider-specific headers."""
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def use_responses_api(self, request: ChatRequest) -> bool:
        """Only the ``openai`` provider has a Responses API path."""
        return False

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        check_images(self.name, request)
        base = self.base_url_for(base_url)
        model = self.model_id(request.model)
        headers = self.headers(api_key)
        if self.use_responses_api(request):
            reply = await self.http.post_json(
                f"{base}/responses",
                build_responses_payload(request, model),
                provider=self.name,
                headers=headers,
                read_timeout=request.timeout,
            )
            return parse_responses(reply.body, self.name, reply.request_id, request.tools)
        reply = await self.http.post_json(
            f"{base}/chat/completions",
            build_chat_payload(request, model, self.flavor),
            provider=self.name,
            headers=headers,
            read_timeout=request.timeout,
        )
        return parse_chat_completion(reply.body, self.name, reply.request_id, request.tools)

    async def list_models(self, *, api_key: str, base_url: str | None = None) -> list[ModelInfo]:
        """``GET {base}/models`` (``gigi_openai.models``)."""
        from gigi_openai.models import list_models

        return await list_models(
            self.http, self.name, self.base_url_for(base_url), self.headers(api_key)
        )

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        base = self.base_url_for(base_url)
        payload: dict[str, Any] = {
            "model": self.model_id(request.model),
            "input": list(request.inputs),
            "encoding_format": "float",
        }
        if request.dimensions is not None:
            payload["dimensions"] = request.dimensions
        extra = request.provider_options.get("extra_body")
        if isinstance(extra, dict):
            payload.update(extra)
        reply = await self.http.post_json(
            f"{base}/embeddings",
            payload,
            provider=self.name,
            headers=self.headers(api_key),
            read_timeout=request.timeout,
        )
        return parse_embeddings(reply.body, self.name, len(request.inputs), reply.request_id)


class OpenAIProvider(OpenAICompatibleProvider):
    """api.openai.com; chat completions by default, the Responses API behind a setting.

    Setting: ``provider_options={"api": "responses"}`` per request, or
    ``GIGI_OPENAI_API=responses`` (or ``OpenAIProvider(api="responses")``) for all.
    """

    name = "openai"
    description = "OpenAI (chat completions; Responses API behind a setting; images)"
    supports = Supports(
        tools=True,
        structured_output=True,
        embeddings=True,
        images=True,
        reasoning=True,
        image_generation=True,
    )
    default_base_url = OPENAI_BASE_URL
    requires_base_url = False
    flavor = Flavor(max_tokens_field="max_completion_tokens", reasoning_style="reasoning_effort")

    def __init__(self, *, api: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.api = api or os.environ.get("GIGI_OPENAI_API", "chat")

    def use_responses_api(self, request: ChatRequest) -> bool:
        return request.provider_options.get("api", self.api) == "responses"

    async def generate_images(
        self, request: ImageRequest, *, api_key: str, base_url: str | None = None
    ) -> ImageResponse:
        """``POST {base}/images/generations`` (``gigi_openai.images``)."""
        from gigi_openai.images import generate_images

        base = self.base_url_for(base_url)
        return await generate_images(
            self.http, self.name, base, self.headers(api_key), request, request.model
        )


class OpenRouterProvider(OpenAICompatibleProvider):
    """openrouter.ai: model strings ``openrouter/<vendor>/<model>`` (the prefix is optional)."""

    name = "openrouter"
    description = "OpenRouter (model ids openrouter/<vendor>/<model>)"
    default_base_url = OPENROUTER_BASE_URL
    requires_base_url = False
    flavor = Flavor(max_tokens_field="max_tokens", reasoning_style="openrouter")

    def model_id(self, model: str) -> str:
        rest = model[len(OPENROUTER_PREFIX) :] if model.startswith(OPENROUTER_PREFIX) else model
        if not rest:
            raise ProviderError(
                self.name,
                f"model {model!r} names no model after 'openrouter/'",
                error_class="config",
                hint="use openrouter/<vendor>/<model>, e.g. openrouter/x-ai/grok-4",
            )
        return rest

    def headers(self, api_key: str) -> dict[str, str]:
        headers = super().headers(api_key)
        headers["http-referer"] = "https://github.com/gigi-agent/gigi"
        headers["x-title"] = "Gigi"
        return headers


def parse_embeddings(
    body: Any, provider: str, expected: int, request_id: str | None
) -> EmbeddingResponse:
    """Vectors in input order; a count or dimension mismatch is an invalid response."""
    data = body.get("data") if isinstance(body, dict) else None

    def invalid(why: str) -> ProviderError:
        return ProviderError(provider, why, error_class="invalid_response", request_id=request_id)

    if not isinstance(data, list):
        raise invalid("the embeddings reply has no data")
    items = sorted(
        (d for d in data if isinstance(d, dict)),
        key=lambda d: d.get("index") if isinstance(d.get("index"), int) else 0,
    )
    vectors: list[list[float]] = []
    for item in items:
        vector = item.get("embedding")
        if not isinstance(vector, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in vector
        ):
            raise invalid("an embedding is not a list of finite numbers")
        vectors.append([float(v) for v in vector])
    if len(vectors) != expected:
        raise invalid(f"expected {expected} embeddings, got {len(vectors)}")
    dimensions = {len(v) for v in vectors}
    if len(dimensions) != 1 or 0 in dimensions:
        raise invalid(f"embeddings have inconsistent dimensions {sorted(dimensions)}")
    return EmbeddingResponse(
        provider=provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        vectors=vectors,
        dimension=dimensions.pop(),
        usage=parse_usage(body.get("usage")),
        request_id=request_id,
    )
