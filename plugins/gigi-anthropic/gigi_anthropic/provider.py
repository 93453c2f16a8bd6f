"""The ``anthropic`` provider: one POST to ``/v1/messages`` through the owned client.

Transport, retries (529 overloaded included, spend-limit 429s excluded) and error
reporting are the shared client's; this class only adds Anthropic's headers and URL.
"""

from __future__ import annotations

from typing import Any

from gigi_anthropic.request import build_payload
from gigi_anthropic.response import parse_message
from gigi_core.llm import (
    ANTHROPIC_RULES,
    ChatRequest,
    ChatResponse,
    ModelInfo,
    Provider,
    Supports,
    check_request_images,
)

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicProvider(Provider):
    """Claude models through the Messages API (no embeddings: Anthropic has none).

    ``provider_options``: ``anthropic_version`` (header override), ``anthropic_beta``
    (a string or list, sent as ``anthropic-beta``), ``thinking_budget`` (explicit
    ``budget_tokens``) and ``extra_body`` (merged into the JSON body).
    """

    name = "anthropic"
    description = "Anthropic Messages API (Claude)"
    supports = Supports(
        tools=True, structured_output=True, embeddings=False, images=True, reasoning=True
    )
    default_base_url = ANTHROPIC_BASE_URL

    def messages_url(self, base_url: str | None) -> str:
        """``{base}/v1/messages``; a base URL already ending in ``/v1`` is accepted too."""
        base = self.base_url_for(base_url)
        if base.endswith("/v1"):
            base = base[: -len("/v1")]
        return f"{base}/v1/messages"

    def headers(self, api_key: str, options: dict[str, Any]) -> dict[str, str]:
        """The key in ``x-api-key`` (never the URL) and the API version."""
        version = options.get("anthropic_version")
        headers = {
            "x-api-key": api_key,
            "anthropic-version": version if isinstance(version, str) else ANTHROPIC_VERSION,
        }
        beta = options.get("anthropic_beta")
        if isinstance(beta, str) and beta:
            headers["anthropic-beta"] = beta
        elif isinstance(beta, list | tuple) and beta:
            headers["anthropic-beta"] = ",".join(str(b) for b in beta)
        return headers

    async def list_models(self, *, api_key: str, base_url: str | None = None) -> list[ModelInfo]:
        """``GET /v1/models``, every page (``gigi_anthropic.models``)."""
        from gigi_anthropic.models import list_models

        url = self.messages_url(base_url).removesuffix("/messages") + "/models"
        return await list_models(self.http, self.name, url, self.headers(api_key, {}))

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        # Anthropic's documented image limits: 5 MB each, 8000 px a side, 100 a request
        check_request_images(self.name, request, ANTHROPIC_RULES)
        url = self.messages_url(base_url)
        plan = build_payload(request, self.name)
        reply = await self.http.post_json(
            url,
            plan.payload,
            provider=self.name,
            headers=self.headers(api_key, request.provider_options),
            read_timeout=request.timeout,
        )
        return parse_message(
            reply.body,
            self.name,
            reply.request_id,
            output_tool=plan.output_tool,
            tools=list(request.tools),
        )
