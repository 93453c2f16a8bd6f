"""Map a free model string to one of this plugin's providers, with no model catalogue."""

from __future__ import annotations

from dataclasses import dataclass

from gigi_core.llm import ProviderError
from gigi_openai.providers import OPENAI_BASE_URL, OPENROUTER_BASE_URL, OPENROUTER_PREFIX

NO_ROUTE_HINT = (
    "use openrouter/<vendor>/<model> (e.g. openrouter/anthropic/claude-sonnet-4), "
    "or give a base URL for an OpenAI-compatible endpoint"
)


@dataclass(frozen=True)
class Route:
    """Which provider serves a model string, the id it is sent as, and the base URL."""

    provider: str
    model_id: str
    base_url: str


def resolve_route(model: str, *, base_url: str | None = None, provider: str | None = None) -> Route:
    """``openrouter/...`` goes to OpenRouter; others need a base URL (or ``provider="openai"``)."""
    if model.startswith(OPENROUTER_PREFIX):
        rest = model[len(OPENROUTER_PREFIX) :]
        if rest:
            return Route("openrouter", rest, (base_url or OPENROUTER_BASE_URL).rstrip("/"))
    elif provider == "openai":
        return Route("openai", model, (base_url or OPENAI_BASE_URL).rstrip("/"))
    elif base_url:
        return Route("openai-compatible", model, base_url.rstrip("/"))
    raise ProviderError(
        provider or "openai-compatible",
        f"no route for model {model!r}: it has no openrouter/ prefix and no base URL is set",
        error_class="config",
        hint=NO_ROUTE_HINT,
    )
