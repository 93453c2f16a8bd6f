"""Defensive parsing shared by provider plugins: tool-call arguments and ids.

Models emit empty, invalid, double-encoded or non-object arguments; those become a
parse error the runtime feeds back, never a call executed with ``{}``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from gigi_core.llm.types import Tool, ToolCall

MAX_ARGUMENT_CHARS = 1_000_000
PREVIEW_CHARS = 200


def preview(raw: str, limit: int = PREVIEW_CHARS) -> str:
    """A bounded excerpt of raw model output for error messages."""
    return raw if len(raw) <= limit else raw[:limit] + "…"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str, str | None]:
    """Return ``(arguments, raw_text, parse_error)``; exactly one of arguments/error is set."""
    if isinstance(raw, dict):
        return raw, json.dumps(raw, ensure_ascii=False), None
    if raw is None:
        return None, "", "the tool call has no arguments (expected a JSON object)"
    if not isinstance(raw, str):
        text = json.dumps(raw, ensure_ascii=False)
        return None, text, f"arguments must be a JSON object, got {type(raw).__name__}"
    if not raw.strip():
        return None, raw, "the arguments are empty (expected a JSON object)"
    if len(raw) > MAX_ARGUMENT_CHARS:
        return None, raw, f"the arguments are too large ({len(raw)} characters)"
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError as exc:
        return None, raw, f"the arguments are not valid JSON ({exc}): {preview(raw)}"
    if isinstance(value, dict):
        return value, raw, None
    if isinstance(value, str):
        return None, raw, "the arguments are a JSON string, not an object (double-encoded?)"
    kind = "null" if value is None else type(value).__name__
    return None, raw, f"arguments must be a JSON object, got {kind}: {preview(raw)}"


def new_call_id(prefix: str = "call_") -> str:
    """A fresh tool-call id for providers that send none (Gemini, some compatible servers)."""
    return f"{prefix}{secrets.token_hex(12)}"


def needs_arguments(name: str, tools: Sequence[Tool] | None) -> bool:
    """False only for a declared tool whose schema requires no property at all."""
    tool = next((t for t in tools or () if t.name == name), None)
    if tool is None:
        return True
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    min_properties = schema.get("minProperties")
    return bool(schema.get("required")) or (isinstance(min_properties, int) and min_properties > 0)


def make_tool_call(
    call_id: Any,
    name: Any,
    raw_arguments: Any,
    *,
    seen_ids: set[str],
    provider_data: dict[str, Any] | None = None,
    tools: Sequence[Tool] | None = None,
) -> ToolCall:
    """Build a ToolCall defensively: generate missing or duplicate ids, keep parse errors.

    ``raw_arguments`` None means the provider sent no arguments field at all: with
    ``tools`` given, that is ``{}`` for a declared tool whose schema requires nothing
    (Claude via OpenRouter omits the field then) and a parse error otherwise.
    """
    cid = call_id if isinstance(call_id, str) and call_id.strip() else ""
    if not cid or cid in seen_ids:
        cid = new_call_id()
    seen_ids.add(cid)
    tool_name = name if isinstance(name, str) else ""
    if raw_arguments is None and tools is not None and not needs_arguments(tool_name, tools):
        raw_arguments = {}
    arguments, raw_text, error = parse_arguments(raw_arguments)
    if not tool_name:
        error = error or "the tool call has no function name"
    return ToolCall(
        id=cid,
        name=tool_name,
        arguments=arguments if error is None else None,
        raw_arguments=raw_text,
        parse_error=error,
        provider_data=provider_data or {},
    )


def join_text(parts: Iterable[str | None], separator: str = "") -> str | None:
    """Concatenate text fragments; None when there is no text at all."""
    pieces = [p for p in parts if p]
    return separator.join(pieces) if pieces else None


def as_int(value: Any) -> int | None:
    """A token count of 0 or more, or None for anything else (omitted, null, negative)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 0:
        return value
    return None
