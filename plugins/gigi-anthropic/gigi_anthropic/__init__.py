"""Gigi provider ``anthropic``: the Messages API over Gigi's owned client (no vendor SDK)."""

from __future__ import annotations

from typing import Any

from gigi_anthropic.provider import ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, AnthropicProvider
from gigi_anthropic.request import DEFAULT_MAX_TOKENS, THINKING_BUDGETS, build_payload
from gigi_anthropic.response import CONTENT_KEY, OUTPUT_TOOL_KEY, parse_message
from gigi_core import hookimpl

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "CONTENT_KEY",
    "DEFAULT_MAX_TOKENS",
    "OUTPUT_TOOL_KEY",
    "THINKING_BUDGETS",
    "AnthropicProvider",
    "build_payload",
    "parse_message",
    "register_providers",
]


@hookimpl
def register_providers(register: Any) -> None:
    """Register ``anthropic`` (it shares the process's pooled client)."""
    register(AnthropicProvider())
