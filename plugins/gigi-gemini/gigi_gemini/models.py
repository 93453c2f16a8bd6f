"""Model discovery for Gemini: ``GET /v1beta/models``, page after page (``pageToken``)."""

from __future__ import annotations

from typing import Any

from gigi_core.llm import LlmHttpClient, ModelInfo, ProviderError, as_int

#: The API's largest page.
PAGE_SIZE = 1000
#: A server that keeps sending a ``nextPageToken`` is cut off here rather than followed forever.
MAX_PAGES = 50
#: What each generation method means for Gigi.
_KINDS = {"generateContent": "chat", "embedContent": "embeddings"}


async def list_models(
    http: LlmHttpClient, provider: str, url: str, headers: dict[str, str]
) -> list[ModelInfo]:
    """All pages, ids without their ``models/`` prefix (as profiles name them)."""
    found: list[ModelInfo] = []
    token: str | None = None
    for _ in range(MAX_PAGES):
        params = {"pageSize": str(PAGE_SIZE)}
        if token:
            params["pageToken"] = token
        reply = await http.get_json(url, provider=provider, headers=headers, params=params)
        body = reply.body if isinstance(reply.body, dict) else {}
        data = body.get("models", [])
        if not isinstance(data, list):
            raise ProviderError(
                provider,
                "the models reply's models field is not a list",
                error_class="invalid_response",
                request_id=reply.request_id,
            )
        found.extend(model for item in data if (model := _model(item)) is not None)
        following = body.get("nextPageToken")
        if not isinstance(following, str) or not following or following == token:
            return found
        token = following
    raise ProviderError(
        provider,
        f"the models listing did not end after {MAX_PAGES} pages",
        error_class="invalid_response",
    )


def _model(item: Any) -> ModelInfo | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    name = item["name"].removeprefix("models/")
    if not name:
        return None
    methods = item.get("supportedGenerationMethods")
    kinds = tuple(_KINDS[m] for m in (methods if isinstance(methods, list) else []) if m in _KINDS)
    display = item.get("displayName")
    return ModelInfo(
        id=name,
        display_name=display if isinstance(display, str) else None,
        context_window=as_int(item.get("inputTokenLimit")),
        output_limit=as_int(item.get("outputTokenLimit")),
        kinds=kinds,
    )
