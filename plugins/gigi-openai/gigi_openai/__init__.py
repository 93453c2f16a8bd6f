"""Gigi providers for the OpenAI wire format: ``openai``, ``openrouter``, ``openai-compatible``."""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl
from gigi_openai.providers import (
    OPENAI_BASE_URL,
    OPENROUTER_BASE_URL,
    OpenAICompatibleProvider,
    OpenAIProvider,
    OpenRouterProvider,
)
from gigi_openai.routing import Route, resolve_route

__all__ = [
    "OPENAI_BASE_URL",
    "OPENROUTER_BASE_URL",
    "OpenAICompatibleProvider",
    "OpenAIProvider",
    "OpenRouterProvider",
    "Route",
    "register_providers",
    "resolve_route",
]


@hookimpl
def register_providers(register: Any) -> None:
    """Register the three providers (each shares the process's pooled client)."""
    register(OpenAIProvider())
    register(OpenRouterProvider())
    register(OpenAICompatibleProvider())
