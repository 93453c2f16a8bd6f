"""A Messages API reply to ``ChatResponse``, defensively.

Tool inputs that are not objects become parse errors, missing ids are generated, and
when the reply holds blocks that must travel back unchanged (thinking with its
signature, redacted thinking, server tools, a paused turn) the content is kept
verbatim in ``provider_data`` for the next request.
"""

from __future__ import annotations

import json
from typing import Any

from gigi_anthropic.messages import CONTENT_KEY, OUTPUT_TOOL_KEY
from gigi_core.llm import (
    ChatResponse,
    FinishReason,
    ProviderError,
    Tool,
    ToolCall,
    Usage,
    as_int,
    join_text,
    make_tool_call,
    parse_arguments,
)

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
    "pause_turn": "other",
}
#: Block types Gigi can rebuild from text and tool calls; anything else is echoed verbatim.
_REBUILDABLE = frozenset({"text", "tool_use"})
REFUSAL_MESSAGE = "the model declined to answer (stop_reason: refusal)"


def parse_usage(raw: Any) -> Usage:
    """Input, output and cache-read tokens as reported (Anthropic's input excludes cache)."""
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")),
        output_tokens=as_int(raw.get("output_tokens")),
        cached_input_tokens=as_int(raw.get("cache_read_input_tokens")),
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _output_text(block: dict[str, Any]) -> str:
    """The structured answer as JSON text; a non-object input is passed on as it came."""
    arguments, raw, _error = parse_arguments(block.get("input"))
    return json.dumps(arguments, ensure_ascii=False) if arguments is not None else raw


def parse_message(
    body: Any,
    provider: str,
    request_id: str | None,
    *,
    output_tool: str | None = None,
    tools: list[Tool] | None = None,
) -> ChatResponse:
    """Normalise a Messages body; a body without a content list is an invalid response.

    Adjacent text blocks (citations split a sentence) are concatenated; text on either
    side of other blocks (server tool calls and results) is separated by a blank line.
    ``tools`` lets a ``tool_use`` without ``input`` mean ``{}`` when nothing is required.
    """
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list):
        raise ProviderError(
            provider,
            "the reply has no content blocks",
            error_class="invalid_response",
            request_id=request_id,
        )
    blocks = [b for b in content if isinstance(b, dict)]
    texts: list[str] = []
    thoughts: list[str | None] = []
    calls: list[ToolCall] = []
    seen: set[str] = set()
    output_text: str | None = None
    output_index: int | None = None
    after_text = False  # the previous block was text: the next text continues it
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            piece = _str(block.get("text")) or ""
            if after_text and texts:
                texts[-1] += piece
            else:
                texts.append(piece)
            after_text = True
            continue
        after_text = False
        if kind == "thinking":
            thoughts.append(_str(block.get("thinking")))
        elif kind == "tool_use":
            if output_tool is not None and output_text is None and block.get("name") == output_tool:
                output_text, output_index = _output_text(block), index
                continue
            calls.append(
                make_tool_call(
                    block.get("id"),
                    block.get("name"),
                    block.get("input"),
                    seen_ids=seen,
                    tools=tools,
                )
            )
    raw_finish = _str(body.get("stop_reason"))
    if raw_finish is None:
        finish: FinishReason = "tool_calls" if calls else "stop"
    else:
        finish = _FINISH.get(raw_finish, "other")
    text = join_text((t.strip("\n") if len(texts) > 1 else t for t in texts), "\n\n")
    refusal: str | None = None
    if finish == "refusal":
        refusal, text = text or REFUSAL_MESSAGE, None
    elif output_text is not None:
        text = output_text  # the structured answer; any preamble stays in provider_data
        if finish == "tool_calls" and not calls:
            finish = "stop"
    provider_data: dict[str, Any] = {}
    if raw_finish == "pause_turn" or any(b.get("type") not in _REBUILDABLE for b in blocks):
        provider_data[CONTENT_KEY] = blocks
        if output_index is not None:
            provider_data[OUTPUT_TOOL_KEY] = output_index
    return ChatResponse(
        provider=provider,
        model=_str(body.get("model")),
        text=text,
        tool_calls=calls,
        finish_reason=finish,
        raw_finish_reason=raw_finish,
        refusal=refusal,
        reasoning=join_text(thoughts),
        usage=parse_usage(body.get("usage")),
        request_id=request_id,
        response_id=_str(body.get("id")),
        provider_data=provider_data,
    )
