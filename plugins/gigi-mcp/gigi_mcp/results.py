"""``CallToolResult`` -> the JSON a Gigi tool returns: data only, capped, binary left out."""

from __future__ import annotations

import json
import os
from typing import Any

from gigi_core import ToolExecutionError

RESULT_MAX = int(os.environ.get("GIGI_MCP_RESULT_MAX_CHARS", "100000"))
ERROR_MAX = 2000


def convert(result: Any, *, action: str, structured: bool) -> Any:
    """Structured content when the action declares a result schema, else the content blocks.

    An ``isError`` result becomes a tool error the model sees (the kernel passes the text of a
    ``ToolExecutionError`` through), capped like any output.
    """
    if getattr(result, "is_error", False):
        text = _joined_text(result)[:ERROR_MAX] or "no details"
        raise ToolExecutionError(f"{action}: the MCP tool reported an error: {text}")
    if structured:
        data = getattr(result, "structured_content", None)
        if data is None:
            data = _json_from_text(result)
        size = len(json.dumps(data, default=str))
        if size > RESULT_MAX:
            raise ToolExecutionError(
                f"{action}: the structured result has {size:,} characters, more than Gigi "
                f"passes on ({RESULT_MAX:,}; GIGI_MCP_RESULT_MAX_CHARS)"
            )
        return data
    blocks: list[dict[str, Any]] = []
    budget = RESULT_MAX
    total = 0
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "unknown")
        if kind == "text":
            text = block.text or ""
            total += len(text)
            blocks.append({"type": "text", "text": text[: max(budget, 0)]})
            budget -= len(text)
        elif kind in ("image", "audio"):
            size = len(getattr(block, "data", "") or "")
            blocks.append(
                {
                    "type": kind,
                    "mime_type": getattr(block, "mime_type", None),
                    "omitted_chars": size,
                }
            )
        elif kind == "resource_link":
            blocks.append({"type": kind, "uri": str(block.uri), "name": block.name})
        elif kind == "resource":
            inner = block.resource
            text = getattr(inner, "text", None)
            entry: dict[str, Any] = {"type": kind, "uri": str(inner.uri)}
            if text is not None:
                total += len(text)
                entry["text"] = text[: max(budget, 0)]
                budget -= len(text)
            blocks.append(entry)
        else:
            blocks.append({"type": str(kind)})
    out: dict[str, Any] = {"content": [b for b in blocks if b.get("text", True) != ""]}
    if total > RESULT_MAX:
        out["truncated"] = (
            f"the tool returned {total:,} characters of text; Gigi kept the first {RESULT_MAX:,}"
        )
    structured_content = getattr(result, "structured_content", None)
    if structured_content is not None and total <= RESULT_MAX:
        if len(json.dumps(structured_content, default=str)) <= RESULT_MAX - total:
            out["structured"] = structured_content
    return out


def _joined_text(result: Any) -> str:
    parts = [getattr(b, "text", "") or "" for b in getattr(result, "content", None) or []]
    return "\n".join(p for p in parts if p).strip()


def _json_from_text(result: Any) -> Any:
    """Older servers put structured output only in a text block (the spec's fallback)."""
    try:
        return json.loads(_joined_text(result))
    except ValueError:
        raise ToolExecutionError("the MCP tool returned no structured content") from None
