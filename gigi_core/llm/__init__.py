"""The provider port: typed requests/responses, ``Provider``, ``ProviderError`` and the client.

Importing this package is cheap: the httpx-based client (``LlmHttpClient``,
``RetryPolicy`` users) loads on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gigi_core.llm.errors import ErrorClass, ProviderError
from gigi_core.llm.lazy import LazyProvider

if TYPE_CHECKING:
    from gigi_core.llm.client import JsonReply, LlmHttpClient
    from gigi_core.llm.provider import Provider, Supports
    from gigi_core.llm.retry import RetryPolicy
    from gigi_core.llm.types import (
        AssistantMessage,
        ChatRequest,
        ChatResponse,
        ContentPart,
        EmbeddingRequest,
        EmbeddingResponse,
        FinishReason,
        ImagePart,
        Message,
        NamedToolChoice,
        ReasoningEffort,
        StructuredOutput,
        SystemMessage,
        TextPart,
        Tool,
        ToolCall,
        ToolChoice,
        ToolResultMessage,
        Usage,
        UserMessage,
    )

# The typed models import pydantic and the client imports httpx: both load on first use.
_LAZY = {
    "LlmHttpClient": "gigi_core.llm.client",
    "JsonReply": "gigi_core.llm.client",
    "shared_http_client": "gigi_core.llm.client",
    "close_shared_http_client": "gigi_core.llm.client",
    "Provider": "gigi_core.llm.provider",
    "Supports": "gigi_core.llm.provider",
    "RetryPolicy": "gigi_core.llm.retry",
    "AssistantMessage": "gigi_core.llm.types",
    "ChatRequest": "gigi_core.llm.types",
    "ChatResponse": "gigi_core.llm.types",
    "ContentPart": "gigi_core.llm.types",
    "EmbeddingRequest": "gigi_core.llm.types",
    "EmbeddingResponse": "gigi_core.llm.types",
    "FinishReason": "gigi_core.llm.types",
    "ImagePart": "gigi_core.llm.types",
    "Message": "gigi_core.llm.types",
    "NamedToolChoice": "gigi_core.llm.types",
    "ReasoningEffort": "gigi_core.llm.types",
    "StructuredOutput": "gigi_core.llm.types",
    "SystemMessage": "gigi_core.llm.types",
    "TextPart": "gigi_core.llm.types",
    "Tool": "gigi_core.llm.types",
    "ToolCall": "gigi_core.llm.types",
    "ToolChoice": "gigi_core.llm.types",
    "ToolResultMessage": "gigi_core.llm.types",
    "Usage": "gigi_core.llm.types",
    "UserMessage": "gigi_core.llm.types",
}

__all__ = [
    "AssistantMessage",
    "ChatRequest",
    "ChatResponse",
    "ContentPart",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "ErrorClass",
    "FinishReason",
    "ImagePart",
    "JsonReply",
    "LazyProvider",
    "LlmHttpClient",
    "Message",
    "NamedToolChoice",
    "Provider",
    "ProviderError",
    "ReasoningEffort",
    "RetryPolicy",
    "StructuredOutput",
    "Supports",
    "SystemMessage",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "close_shared_http_client",
    "shared_http_client",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gigi_core.llm' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
