"""Gigi provider ``anthropic``: the Messages API over Gigi's owned client (no vendor SDK)."""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl
from gigi_core.llm import LazyProvider, lazy_exports

# Provider code (and the pydantic models it uses) loads on first use, not at plugin load.
_EXPORTS = {
    "ANTHROPIC_BASE_URL": "gigi_anthropic.provider",
    "ANTHROPIC_VERSION": "gigi_anthropic.provider",
    "AnthropicProvider": "gigi_anthropic.provider",
    "DEFAULT_MAX_TOKENS": "gigi_anthropic.request",
    "THINKING_BUDGETS": "gigi_anthropic.request",
    "build_payload": "gigi_anthropic.request",
    "CONTENT_KEY": "gigi_anthropic.response",
    "OUTPUT_TOOL_KEY": "gigi_anthropic.response",
    "parse_message": "gigi_anthropic.response",
}

__all__ = [*sorted(_EXPORTS), "register_providers"]

__getattr__ = lazy_exports(__name__, _EXPORTS)


@hookimpl
def register_providers(register: Any) -> None:
    """Register ``anthropic`` (built on first use; it shares the process's pooled client)."""
    register(LazyProvider("anthropic", "gigi_anthropic.provider:AnthropicProvider"))
