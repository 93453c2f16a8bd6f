"""The fakes' models endpoints, shaped and paginated as each provider's real one.

OpenAI (and OpenAI-compatible servers, OpenRouter): ``GET {base}/models``, one page.
Anthropic: ``GET /v1/models?limit=&after_id=``, pages with ``has_more`` / ``last_id``.
Gemini: ``GET /v1beta/models?pageSize=&pageToken=``, pages with ``nextPageToken``.
A fake lists ``fake.models`` (ids), ``fake.models_page_size`` per page, unless a reply
is scripted for the ``models`` route (errors, odd shapes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gigi_core.testing.fake_providers.server import RecordedRequest

OPENAI_MODELS = ("gpt-4o", "gpt-4o-mini", "text-embedding-3-small")
ANTHROPIC_MODELS = ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1")
GEMINI_MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "text-embedding-004")


def _first(request: RecordedRequest, name: str) -> str | None:
    values = request.query.get(name)
    return values[0] if values else None


def _size(request: RecordedRequest, name: str, default: int) -> int:
    raw = _first(request, name)
    return int(raw) if raw and raw.isdigit() and int(raw) > 0 else default


def openai_models(models: Sequence[str]) -> dict[str, Any]:
    """``GET /v1/models``: the whole list at once (OpenAI does not paginate it)."""
    return {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": 1_700_000_000 + i, "owned_by": "fake"}
            for i, m in enumerate(models)
        ],
    }


def anthropic_models(
    models: Sequence[str], request: RecordedRequest, page_size: int
) -> dict[str, Any]:
    """One page after ``after_id``; ``limit`` caps it (at most ``page_size`` here)."""
    limit = min(_size(request, "limit", page_size), page_size)
    after = _first(request, "after_id")
    start = list(models).index(after) + 1 if after in models else 0
    page = list(models)[start : start + limit]
    return {
        "data": [
            {
                "type": "model",
                "id": m,
                "display_name": m.replace("-", " ").title(),
                "created_at": "2025-01-01T00:00:00Z",
            }
            for m in page
        ],
        "has_more": start + limit < len(models),
        "first_id": page[0] if page else None,
        "last_id": page[-1] if page else None,
    }


def gemini_models(
    models: Sequence[str], request: RecordedRequest, page_size: int
) -> dict[str, Any]:
    """One page from ``pageToken`` (an opaque offset here); ``nextPageToken`` while more."""
    size = min(_size(request, "pageSize", page_size), page_size)
    token = _first(request, "pageToken") or ""
    start = int(token[len("p") :]) if token.startswith("p") and token[1:].isdigit() else 0
    page = list(models)[start : start + size]
    body: dict[str, Any] = {
        "models": [
            {
                "name": f"models/{m}",
                "displayName": m.replace("-", " ").title(),
                "inputTokenLimit": 1_048_576,
                "outputTokenLimit": 8_192,
                "supportedGenerationMethods": (
                    ["embedContent"] if "embedding" in m else ["generateContent", "countTokens"]
                ),
            }
            for m in page
        ]
    }
    if start + size < len(models):
        body["nextPageToken"] = f"p{start + size}"
    return body
