"""Tool results as people read them in a terminal: aligned fields, lists and tables.

The console used to print each result as one line of JSON; ``/json`` keeps that form for
copying into programs. Values are tool output (untrusted): characters a terminal would act
on (ANSI escapes, bidi overrides) are shown escaped, never written raw.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

INDENT = "  "
MAX_CELL = 60  # a table cell's characters; longer values end with an ellipsis
MAX_INLINE = 100  # a list of scalars this long or shorter stays on one line
_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})


def result_lines(tool: str, result: Any, *, raw: bool = False) -> list[str]:
    """``tool → value`` for a scalar, else ``tool →`` and the value's lines indented."""
    if raw:
        return [f"{tool} → {json.dumps(result, ensure_ascii=False, sort_keys=True, default=str)}"]
    if _is_scalar(result):
        return [f"{tool} → {_scalar(result)}"]
    lines = readable(result)
    if not lines:
        return [f"{tool} → (empty)"]
    return [f"{tool} →", *(INDENT + line for line in lines)]


def readable(value: Any) -> list[str]:
    """A dict as aligned ``key  value`` lines, a list of records as a table, else a list."""
    if isinstance(value, dict):
        return _mapping(value)
    if isinstance(value, list | tuple):
        return _sequence(list(value))
    return [_scalar(value)]


def _mapping(data: dict[Any, Any]) -> list[str]:
    if not data:
        return ["(empty)"]
    keys = [printable(str(k)) for k in data]
    width = max(len(k) for k in keys)
    lines: list[str] = []
    for key, value in zip(keys, data.values(), strict=True):
        if _is_scalar(value) or (_scalars(value) and len(_inline(value)) <= MAX_INLINE):
            shown = _scalar(value) if _is_scalar(value) else _inline(value)
            lines.append(f"{key.ljust(width)}  {shown}".rstrip())
        else:
            lines.append(f"{key}:")
            lines += [INDENT + line for line in readable(value)]
    return lines


def _sequence(items: list[Any]) -> list[str]:
    if not items:
        return ["(none)"]
    if _scalars(items):
        inline = _inline(items)
        return [inline] if len(inline) <= MAX_INLINE else [f"- {_scalar(v)}" for v in items]
    if all(isinstance(i, dict) for i in items) and all(
        all(_is_scalar(v) or _scalars(v) for v in i.values()) for i in items
    ):
        return _table(items)
    lines: list[str] = []
    for item in items:
        inner = readable(item)
        lines.append(f"- {inner[0]}")
        lines += [INDENT + line for line in inner[1:]]
    return lines


def _table(rows: list[dict[Any, Any]]) -> list[str]:
    """Records as columns: headers are the keys in first-seen order, cells capped."""
    columns: list[Any] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    cells = [[_cap(_cell(row[c]) if c in row else "") for c in columns] for row in rows]
    headers = [printable(str(c)) for c in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return lines


def _cell(value: Any) -> str:
    return _scalar(value) if _is_scalar(value) else _inline(value)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _scalars(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(_is_scalar(v) for v in value)


def _inline(values: Any) -> str:
    return ", ".join(_scalar(v) for v in values) if values else "(none)"


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return printable(value) if value else '""'
    return str(value)


def _cap(text: str) -> str:
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def printable(text: str) -> str:
    """Escape what a terminal would act on or hide (a newline shows as ``\\u000a``)."""
    if text.isprintable():
        return text
    return "".join(
        (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        if unicodedata.category(c) in _HIDDEN
        else c
        for c in text
    )


def reply_lines(reply: Any, *, raw: bool = False) -> list[str]:
    """A reply in the order it happened: tool results, then the model's text, then what
    was refused and the confirmations waiting (with how to answer them)."""
    from dataclasses import replace

    lines: list[str] = []
    for citation in reply.citations:
        lines += result_lines(citation.tool, citation.result, raw=raw)
    if reply.text.strip():
        lines.append(reply.text.strip())
    rest = replace(reply, text="", citations=[]).full_text()
    if rest:
        lines.append(rest)
    return lines
