"""Image input rules for OpenAI-format servers, checked before anything is uploaded."""

from __future__ import annotations

from gigi_core.llm import OPENAI_RULES, ChatRequest, check_request_images


def check_images(provider: str, request: ChatRequest) -> None:
    """OpenAI's documented limits: PNG, JPEG, WebP, still GIF; 20 MB each, 50 MB a request.

    OpenAI-compatible servers and OpenRouter get the same rules: they pass images on to
    models with the same or tighter limits.
    """
    check_request_images(provider, request, OPENAI_RULES)
