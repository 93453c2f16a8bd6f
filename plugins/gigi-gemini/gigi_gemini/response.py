"""A Gemini ``GenerateContentResponse`` to a ChatResponse, defensively.

Gemini says ``STOP`` even when it called functions, sends calls without ids, reports
a bad call as ``MALFORMED_FUNCTION_CALL`` with no call at all, and answers a blocked
prompt with no candidates; each case becomes something the runtime can act on. A bad
call becomes a ``ToolCall`` with a parse error (named after the declared tool its
finish message mentions), which the runtime feeds back like any malformed call.
"""

from __future__ import annotations

import re
from typing import Any

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
)
from gigi_gemini.request import MALFORMED_KEY, NATIVE_ID_KEY, PARTS_KEY, PROVIDER, SIGNATURE_KEY

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "BLOCKLIST": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "LANGUAGE": "content_filter",
    # The model tried to call a function and produced something unusable: nothing to
    # execute; the runtime re-prompts with ``provider_data["finish_message"]``.
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
}
BAD_CALL_REASONS = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"}
)


def parse_usage(raw: Any) -> Usage:
    """``usageMetadata`` as reported: output excludes thoughts, which are ``reasoning``."""
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=as_int(raw.get("promptTokenCount")),
        output_tokens=as_int(raw.get("candidatesTokenCount")),
        reasoning_tokens=as_int(raw.get("thoughtsTokenCount")),
        cached_input_tokens=as_int(raw.get("cachedContentTokenCount")),
        total_tokens=as_int(raw.get("totalTokenCount")),
    )


def parse_generate_response(
    body: Any, request_id: str | None, tools: list[Tool] | None = None
) -> ChatResponse:
    """Normalise one reply; a body with neither candidates nor a block reason raises.

    ``tools`` (the request's) name the call a ``MALFORMED_FUNCTION_CALL`` stood for.
    """
    if not isinstance(body, dict):
        raise _invalid("the reply is not a JSON object", request_id)
    common: dict[str, Any] = {
        "provider": PROVIDER,
        "model": _str(body.get("modelVersion")),
        "usage": parse_usage(body.get("usageMetadata")),
        "request_id": request_id,
        "response_id": _str(body.get("responseId")),
    }
    candidates = body.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return _blocked(body.get("promptFeedback"), common, request_id)
    candidate = candidates[0]
    content = candidate.get("content") if isinstance(candidate.get("content"), dict) else {}
    parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
    text, reasoning, calls = _read_parts(parts)
    raw_finish = _str(candidate.get("finishReason"))
    finish: FinishReason = _FINISH.get(raw_finish, "other") if raw_finish else "stop"
    if calls and finish == "stop":
        finish = "tool_calls"  # Gemini says STOP with calls: detect them from parts
    provider_data: dict[str, Any] = {}
    if any("thoughtSignature" in p for p in parts):
        provider_data[PARTS_KEY] = parts  # echoed verbatim on continuation
    finish_message = _str(candidate.get("finishMessage"))
    if finish_message:
        provider_data["finish_message"] = finish_message
    refusal = None
    if finish == "content_filter" and text is None and not calls:
        refusal = finish_message or f"Gemini stopped the answer ({raw_finish})"
    if raw_finish in BAD_CALL_REASONS:
        provider_data["feedback"] = _bad_call_feedback(raw_finish, finish_message)
        if not calls:
            calls = [_bad_call(raw_finish, finish_message, tools)]
    return ChatResponse(
        text=text,
        tool_calls=calls,
        finish_reason=finish,
        raw_finish_reason=raw_finish,
        refusal=refusal,
        reasoning=reasoning,
        provider_data=provider_data,
        **common,
    )


def _read_parts(parts: list[dict[str, Any]]) -> tuple[str | None, str | None, list[ToolCall]]:
    texts: list[str | None] = []
    thoughts: list[str | None] = []
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for part in parts:
        call = part.get("functionCall")
        if isinstance(call, dict):
            data: dict[str, Any] = {}
            native = call.get("id")
            if isinstance(native, str) and native.strip():
                data[NATIVE_ID_KEY] = native
            if isinstance(part.get("thoughtSignature"), str):
                data[SIGNATURE_KEY] = part["thoughtSignature"]
            calls.append(
                make_tool_call(
                    native,
                    call.get("name"),
                    call.get("args", {}),
                    seen_ids=seen,
                    provider_data=data,
                )
            )
        elif isinstance(part.get("text"), str):
            (thoughts if part.get("thought") is True else texts).append(part["text"])
    return join_text(texts), join_text(thoughts), calls


def _blocked(feedback: Any, common: dict[str, Any], request_id: str | None) -> ChatResponse:
    """No candidates: a blocked prompt is a refusal; anything else is an invalid reply."""
    reason = _str(feedback.get("blockReason")) if isinstance(feedback, dict) else None
    if not reason:
        raise _invalid("the reply has no candidates", request_id)
    message = _str(feedback.get("blockReasonMessage"))
    refusal = f"Gemini blocked the prompt ({reason})" + (f": {message}" if message else "")
    return ChatResponse(
        finish_reason="refusal",
        raw_finish_reason=reason,
        refusal=refusal,
        provider_data={"prompt_feedback": feedback},
        **common,
    )


def _bad_call_feedback(reason: str, finish_message: str | None) -> str:
    """Text the runtime can send back so the model retries the call properly."""
    detail = f" ({finish_message})" if finish_message else ""
    return (
        f"Your last function call could not be used: Gemini reported {reason}{detail}. "
        "Call the function again with valid JSON arguments matching its declared schema, "
        "or answer without calling a function."
    )


def _bad_call(reason: str, finish_message: str | None, tools: list[Tool] | None) -> ToolCall:
    """The unusable call as a ToolCall with a parse error: never run, always answered."""
    detail = f" ({finish_message})" if finish_message else ""
    return make_tool_call(
        None,
        _named_tool(finish_message, tools) or "",
        None,
        seen_ids=set(),
        provider_data={MALFORMED_KEY: reason},
    ).model_copy(
        update={
            "raw_arguments": finish_message or "",
            "parse_error": f"Gemini reported {reason}{detail}; the call could not be read",
        }
    )


def _named_tool(finish_message: str | None, tools: list[Tool] | None) -> str | None:
    """The declared tool the finish message mentions first; the only tool when just one."""
    names = [t.name for t in tools or ()]
    if finish_message:
        found = [
            (m.start(), name)
            for name in names
            if (m := re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", finish_message))
        ]
        if found:
            return min(found)[1]
    return names[0] if len(names) == 1 else None


def _invalid(why: str, request_id: str | None) -> ProviderError:
    return ProviderError(PROVIDER, why, error_class="invalid_response", request_id=request_id)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
