"""Model discovery for Anthropic: ``GET /v1/models``, page after page (``after_id``)."""

from __future__ import annotations

from typing import Any

from gigi_core.llm import LlmHttpClient, ModelInfo, ProviderError

#: The API's largest page; a key rarely sees more than a few dozen models.
PAGE_LIMIT = 1000
#: A server that keeps saying ``has_more`` is cut off here rather than followed forever.
MAX_PAGES = 50


async def list_models(
    http: LlmHttpClient, provider: str, url: str, headers: dict[str, str]
) -> list[ModelInfo]:
    """All pages, in the API's order (newest first); stops when ``has_more`` is false."""
    found: list[ModelInfo] = []
    after: str | None = None
    for _ in range(MAX_PAGES):
        params = {"limit": str(PAGE_LIMIT)}
        if after is not None:
            params["after_id"] = after
        reply = await http.get_json(url, provider=provider, headers=headers, params=params)
        body = reply.body if isinstance(reply.body, dict) else {}
        data = body.get("data")
        if not isinstance(data, list):
            raise ProviderError(
                provider,
                "the models reply has no data list",
                error_class="invalid_response",
                request_id=reply.request_id,
            )
        found.extend(model for item in data if (model := _model(item)) is not None)
        last = body.get("last_id")
        if body.get("has_more") is not True or not isinstance(last, str) or last == after:
            return found
        after = last
    raise ProviderError(
        provider,
        f"the models listing did not end after {MAX_PAGES} pages",
        error_class="invalid_response",
    )


def _model(item: Any) -> ModelInfo | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        return None
    name, created = item.get("display_name"), item.get("created_at")
    return ModelInfo(
        id=item["id"],
        display_name=name if isinstance(name, str) else None,
        created=created if isinstance(created, str) else None,
        kinds=("chat",),
    )
