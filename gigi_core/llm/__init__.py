"""The provider port: typed requests/responses, ``Provider``, ``ProviderError`` and the client.

This is the public API for provider plugins (``gigi-openai``, ``gigi-anthropic``, yours):
import from here, never from ``gigi_core.llm.<module>``, whose layout may change.

Importing this package is cheap: the typed models (pydantic), the httpx-based client and
the parsing helpers load on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gigi_core.llm.errors import ErrorClass, ProviderError
from gigi_core.llm.lazy import LazyProvider, lazy_exports

if TYPE_CHECKING:
    from gigi_core.llm.budgets import BudgetExhausted
    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.client import (
        JsonReply,
        LlmHttpClient,
        close_shared_http_client,
        shared_http_client,
    )
    from gigi_core.llm.image_rules import (
        ANTHROPIC_RULES,
        GEMINI_RULES,
        OPENAI_RULES,
        ImageRules,
        accepts_images,
        check_image,
        check_request_images,
        generated_image,
    )
    from gigi_core.llm.image_sniff import ImageInfo, ImageRejected, sniff_image
    from gigi_core.llm.parsing import as_int, join_text, make_tool_call, parse_arguments
    from gigi_core.llm.provider import ModelInfo, Provider, Supports
    from gigi_core.llm.records import NothingToResolve
    from gigi_core.llm.retry import RetryPolicy
    from gigi_core.llm.types import (
        AssistantMessage,
        ChatRequest,
        ChatResponse,
        ContentPart,
        EmbeddingRequest,
        EmbeddingResponse,
        FinishReason,
        GeneratedImage,
        ImagePart,
        ImageRequest,
        ImageResponse,
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
    from gigi_core.llm.usage import parse_since

# The typed models import pydantic and the client imports httpx: both load on first use.
_LAZY = {
    "LlmHttpClient": "gigi_core.llm.client",
    "JsonReply": "gigi_core.llm.client",
    "shared_http_client": "gigi_core.llm.client",
    "close_shared_http_client": "gigi_core.llm.client",
    # Defensive parsing every provider needs: tool-call arguments and ids, text, counts.
    "as_int": "gigi_core.llm.parsing",
    "join_text": "gigi_core.llm.parsing",
    "make_tool_call": "gigi_core.llm.parsing",
    "parse_arguments": "gigi_core.llm.parsing",
    "parse_since": "gigi_core.llm.usage",
    # No model is configured for the owner: surfaces turn it into a set-up hint.
    "NothingToResolve": "gigi_core.llm.records",
    "Place": "gigi_core.llm.channel_policy",
    # A budget cannot cover the call: says which, what is left and when it resets.
    "BudgetExhausted": "gigi_core.llm.budgets",
    "ModelInfo": "gigi_core.llm.provider",
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
    "ImageRequest": "gigi_core.llm.types",
    "ImageResponse": "gigi_core.llm.types",
    "GeneratedImage": "gigi_core.llm.types",
    "ImageInfo": "gigi_core.llm.image_sniff",
    "ImageRejected": "gigi_core.llm.image_sniff",
    "sniff_image": "gigi_core.llm.image_sniff",
    "ImageRules": "gigi_core.llm.image_rules",
    "OPENAI_RULES": "gigi_core.llm.image_rules",
    "ANTHROPIC_RULES": "gigi_core.llm.image_rules",
    "GEMINI_RULES": "gigi_core.llm.image_rules",
    "accepts_images": "gigi_core.llm.image_rules",
    "check_image": "gigi_core.llm.image_rules",
    "check_request_images": "gigi_core.llm.image_rules",
    "generated_image": "gigi_core.llm.image_rules",
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
    "ANTHROPIC_RULES",
    "GEMINI_RULES",
    "OPENAI_RULES",
    "AssistantMessage",
    "BudgetExhausted",
    "ChatRequest",
    "ChatResponse",
    "ContentPart",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "ErrorClass",
    "FinishReason",
    "GeneratedImage",
    "ImageInfo",
    "ImagePart",
    "ImageRejected",
    "ImageRequest",
    "ImageResponse",
    "ImageRules",
    "JsonReply",
    "LazyProvider",
    "LlmHttpClient",
    "Message",
    "ModelInfo",
    "NamedToolChoice",
    "NothingToResolve",
    "Place",
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
    "accepts_images",
    "as_int",
    "check_image",
    "check_request_images",
    "close_shared_http_client",
    "generated_image",
    "join_text",
    "lazy_exports",
    "make_tool_call",
    "parse_arguments",
    "parse_since",
    "shared_http_client",
    "sniff_image",
]


__getattr__ = lazy_exports("gigi_core.llm", _LAZY)
