"""Gigi provider for the Google Gemini API: ``generateContent`` chat and batch embeddings."""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl
from gigi_gemini.provider import GEMINI_BASE_URL, GeminiProvider
from gigi_gemini.request import build_generate_payload
from gigi_gemini.response import parse_generate_response
from gigi_gemini.schema import to_openapi_schema

__all__ = [
    "GEMINI_BASE_URL",
    "GeminiProvider",
    "build_generate_payload",
    "parse_generate_response",
    "register_providers",
    "to_openapi_schema",
]


@hookimpl
def register_providers(register: Any) -> None:
    """Register ``gemini`` (it shares the process's pooled client)."""
    register(GeminiProvider())
