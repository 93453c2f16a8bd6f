"""Typed requests and responses of the provider port, independent of any vendor's wire format.

Pydantic models so conversations round-trip through JSON (durable runs) and plugin
authors get validation at the boundary; model ids stay free strings.
"""

from __future__ import annotations

import base64
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
FinishReason = Literal[
    "stop", "length", "tool_calls", "content_filter", "refusal", "error", "other"
]
EmbeddingPurpose = Literal["document", "query"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# ---------------------------------------------------------------- content parts


class TextPart(_Model):
    """A run of text inside a message."""

    type: Literal["text"] = "text"
    text: str


class ImagePart(_Model):
    """An image given by an ``https:`` URL or a ``data:`` URL (base64); providers convert.

    Inline images live only in the request being sent: the agent adds them at call time,
    so run state, journals and usage rows never hold their bytes.
    """

    type: Literal["image"] = "image"
    url: str
    detail: Literal["auto", "low", "high"] | None = None

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str = "image/png") -> ImagePart:
        """Build a ``data:`` URL part so providers that need inline bytes get them."""
        encoded = base64.b64encode(data).decode("ascii")
        return cls(url=f"data:{media_type};base64,{encoded}")

    def media_type(self) -> str | None:
        """The declared type of an inline image (None for a remote URL)."""
        inline = self.inline_data()
        return inline[0] if inline is not None else None

    def size(self) -> int | None:
        """The decoded size in bytes of an inline image, from its base64 length."""
        inline = self.inline_data()
        if inline is None:
            return None
        data = inline[1]
        return len(data) * 3 // 4 - data[-2:].count("=")

    def inline_data(self) -> tuple[str, str] | None:
        """Return ``(media_type, base64)`` for a ``data:`` URL, None for a remote URL."""
        if not self.url.startswith("data:") or ";base64," not in self.url:
            return None
        header, _, payload = self.url.partition(";base64,")
        return header[len("data:") :] or "application/octet-stream", payload


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


# ---------------------------------------------------------------- tool calls


class ToolCall(_Model):
    """A call the model proposed; ``arguments`` is None whenever ``parse_error`` is set.

    Never run a call with a parse error: feed the error back so the model can fix it.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""
    parse_error: str | None = None
    provider_data: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the arguments parsed into a JSON object."""
        return self.parse_error is None and self.arguments is not None


# ---------------------------------------------------------------- messages


class SystemMessage(_Model):
    """Instructions; providers place them where their format wants (first message, top level)."""

    role: Literal["system"] = "system"
    content: str


class UserMessage(_Model):
    """What a person (or the runtime on their behalf) said."""

    role: Literal["user"] = "user"
    content: str | list[ContentPart]


class AssistantMessage(_Model):
    """A previous model turn, echoed back verbatim; ``provider_data`` keeps opaque blocks.

    Opaque blocks are things like Anthropic thinking signatures or OpenRouter
    ``reasoning_details`` that must be sent back unchanged on continuation.
    """

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    provider_data: dict[str, Any] = Field(default_factory=dict)


class ToolResultMessage(_Model):
    """The result of one tool call; every proposed call must be answered before the next turn."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str
    name: str | None = None
    is_error: bool = False


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage,
    Field(discriminator="role"),
]


# ---------------------------------------------------------------- request


class Tool(_Model):
    """A function the model may call; ``parameters`` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool = False


class NamedToolChoice(_Model):
    """Force the model to call exactly this tool."""

    type: Literal["tool"] = "tool"
    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


class StructuredOutput(_Model):
    """Ask for a JSON reply matching ``schema``; ``strict`` where the provider supports it."""

    schema_: dict[str, Any] = Field(alias="schema")
    name: str = "output"
    description: str | None = None
    strict: bool = True

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
    )


class ChatRequest(_Model):
    """One chat call. ``provider_options`` carries settings only one provider understands."""

    model: str
    messages: list[Message]
    tools: list[Tool] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    structured_output: StructuredOutput | None = None
    reasoning_effort: ReasoningEffort | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = None
    timeout: float | None = Field(default=None, gt=0)
    provider_options: dict[str, Any] = Field(default_factory=dict)

    def system_text(self) -> str | None:
        """All system messages joined, for formats that take instructions at top level."""
        parts = [m.content for m in self.messages if isinstance(m, SystemMessage)]
        return "\n\n".join(parts) if parts else None

    def conversation(self) -> list[Message]:
        """The messages without system ones, for formats that hoist the system prompt."""
        return [m for m in self.messages if not isinstance(m, SystemMessage)]


# ---------------------------------------------------------------- response


class Usage(_Model):
    """Token counts as the provider reported them; totals are never derived.

    Negative counts (and a negative or non-finite cost) become None: unknown.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None

    @field_validator(
        "input_tokens", "output_tokens", "reasoning_tokens", "cached_input_tokens", "total_tokens"
    )
    @classmethod
    def _count(cls, value: int | None) -> int | None:
        """A negative count is unknown: stored, it would lower run and usage totals."""
        return value if value is None or value >= 0 else None

    @field_validator("cost")
    @classmethod
    def _cost(cls, value: float | None) -> float | None:
        return value if value is None or (math.isfinite(value) and value >= 0) else None


class ChatResponse(_Model):
    """A normalised reply: text, proposed calls, why it stopped, refusal and usage."""

    provider: str
    model: str | None = None
    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: FinishReason = "stop"
    raw_finish_reason: str | None = None
    refusal: str | None = None
    reasoning: str | None = None
    usage: Usage = Field(default_factory=Usage)
    request_id: str | None = None
    response_id: str | None = None
    provider_data: dict[str, Any] = Field(default_factory=dict)

    def to_message(self) -> AssistantMessage:
        """The assistant turn to append before answering the tool calls."""
        return AssistantMessage(
            content=self.text, tool_calls=list(self.tool_calls), provider_data=self.provider_data
        )


# ---------------------------------------------------------------- embeddings


class EmbeddingRequest(_Model):
    """A batch of texts to embed; ``purpose`` helps providers with query/document modes."""

    model: str
    inputs: list[str] = Field(min_length=1)
    dimensions: int | None = Field(default=None, gt=0)
    purpose: EmbeddingPurpose | None = None
    timeout: float | None = Field(default=None, gt=0)
    provider_options: dict[str, Any] = Field(default_factory=dict)


class EmbeddingResponse(_Model):
    """One vector per input, in input order, all of length ``dimension``."""

    provider: str
    model: str | None = None  # the provider's name for it (an alias, a version suffix)
    vectors: list[list[float]]
    dimension: int
    # The model Gigi asked for, set by ``kernel.llm``: the fallback's when the fallback
    # answered. Store vectors under this, not ``model``: it is what the next call asks for.
    requested_model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    request_id: str | None = None


# ---------------------------------------------------------------- image generation


class ImageRequest(_Model):
    """Draw ``count`` pictures from ``prompt``; the prompt is sent, never stored."""

    model: str
    prompt: str = Field(min_length=1, max_length=4000)
    size: str | None = None  # e.g. "1024x1024"; providers that size by aspect ignore it
    count: int = Field(default=1, ge=1, le=4)
    timeout: float | None = Field(default=None, gt=0)
    provider_options: dict[str, Any] = Field(default_factory=dict)


class GeneratedImage(_Model):
    """One picture as bytes; providers sniff and check them before handing them out."""

    data: bytes
    media_type: str
    width: int
    height: int


class ImageResponse(_Model):
    """The pictures a provider drew, with usage as it reported it."""

    provider: str
    model: str | None = None
    images: list[GeneratedImage]
    usage: Usage = Field(default_factory=Usage)
    request_id: str | None = None
    revised_prompt: bool = False  # the provider rewrote the prompt (the text is not kept)
