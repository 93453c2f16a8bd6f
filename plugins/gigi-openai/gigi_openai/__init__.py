"""Gigi providers for the OpenAI wire format: ``openai``, ``openrouter``, ``openai-compatible``."""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl
from gigi_core.llm import LazyProvider, lazy_exports

# Provider code (and the pydantic models it uses) loads on first use, not at plugin load.
_EXPORTS = {
    "OPENAI_BASE_URL": "gigi_openai.providers",
    "OPENROUTER_BASE_URL": "gigi_openai.providers",
    "OpenAICompatibleProvider": "gigi_openai.providers",
    "OpenAIProvider": "gigi_openai.providers",
    "OpenRouterProvider": "gigi_openai.providers",
    "Route": "gigi_openai.routing",
    "resolve_route": "gigi_openai.routing",
}

__all__ = [*sorted(_EXPORTS), "register_providers"]

__getattr__ = lazy_exports(__name__, _EXPORTS)


@hookimpl
def register_providers(register: Any) -> None:
    """Register the three providers (built on first use; they share the pooled client)."""
    register(LazyProvider("openai", "gigi_openai.providers:OpenAIProvider"))
    register(LazyProvider("openrouter", "gigi_openai.providers:OpenRouterProvider"))
    register(LazyProvider("openai-compatible", "gigi_openai.providers:OpenAICompatibleProvider"))
