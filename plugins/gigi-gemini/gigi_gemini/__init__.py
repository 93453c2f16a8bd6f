"""Gigi provider for the Google Gemini API: ``generateContent`` chat and batch embeddings."""

from __future__ import annotations

from typing import Any

from gigi_core import hookimpl
from gigi_core.llm import LazyProvider, lazy_exports

# Provider code (and the pydantic models it uses) loads on first use, not at plugin load.
_EXPORTS = {
    "GEMINI_BASE_URL": "gigi_gemini.provider",
    "GeminiProvider": "gigi_gemini.provider",
    "build_generate_payload": "gigi_gemini.request",
    "parse_generate_response": "gigi_gemini.response",
    "to_openapi_schema": "gigi_gemini.schema",
}

__all__ = [*sorted(_EXPORTS), "register_providers"]

__getattr__ = lazy_exports(__name__, _EXPORTS)


@hookimpl
def register_providers(register: Any) -> None:
    """Register ``gemini`` (built on first use; it shares the process's pooled client)."""
    register(LazyProvider("gemini", "gigi_gemini.provider:GeminiProvider"))
