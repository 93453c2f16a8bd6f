"""Bounds on tool-call arguments, whatever shape they arrived in, and on error details.

Arguments come as JSON text (OpenAI-style), as objects (Anthropic ``input``, Gemini
``args``), from the CLI or from a surface. Each shape meets the same limits before anything
else looks at it, so a value nested 900 levels deep or 10 MB large is refused with a short
reason instead of exhausting serialisers and being quoted back in full:

- ``GIGI_TOOL_ARGS_MAX_DEPTH`` (default 32): nesting of objects and arrays;
- ``GIGI_TOOL_ARGS_MAX_CHARS`` (default 1,000,000): the arguments' size as JSON text;
- ``GIGI_TOOL_ERROR_MAX_CHARS`` (default 500): an error detail sent to a model or a person.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from gigi_core.errors import ConfigError

_DEFAULTS = {
    "GIGI_TOOL_ARGS_MAX_DEPTH": 32,
    "GIGI_TOOL_ARGS_MAX_CHARS": 1_000_000,
    "GIGI_TOOL_ERROR_MAX_CHARS": 500,
}


@dataclass(frozen=True)
class ArgumentLimits:
    max_depth: int
    max_chars: int
    error_chars: int


_cache: dict[tuple[str | None, ...], ArgumentLimits] = {}


def limits() -> ArgumentLimits:
    """The limits in force (read from the environment; a bad value is a ConfigError)."""
    raw = tuple(os.environ.get(var) for var in _DEFAULTS)
    found = _cache.get(raw)
    if found is None:
        values = [
            _positive(var, text, d) for (var, d), text in zip(_DEFAULTS.items(), raw, strict=True)
        ]
        found = _cache[raw] = ArgumentLimits(*values)
    return found


def _positive(var: str, raw: str | None, default: int) -> int:
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise ConfigError(f"{var}: {raw!r} is not a whole number of at least 1")
    return int(value)


def problem(args: Any, bounds: ArgumentLimits | None = None) -> str | None:
    """Why ``args`` break the depth or size limit, or None; never recurses, stops early."""
    bounds = bounds or limits()
    size = 0
    stack: list[tuple[Any, int]] = [(args, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth > bounds.max_depth:
                return _too_deep(bounds)
            size += 2 + 2 * len(value)  # braces, ": " and ", " per member
            for key, item in value.items():
                size += len(key) + 2 if isinstance(key, str) else 8
                stack.append((item, depth + 1))
        elif isinstance(value, list | tuple):
            if depth > bounds.max_depth:
                return _too_deep(bounds)
            size += 2 + 2 * len(value)
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            size += len(value) + 2
        elif isinstance(value, bool) or value is None:
            size += 5
        elif isinstance(value, int):
            size += len(str(value)) if abs(value) < 10**30 else 40
        else:
            size += 24
        if size > bounds.max_chars:
            return (
                f"the arguments are too large (over {bounds.max_chars:,} characters as JSON, "
                "GIGI_TOOL_ARGS_MAX_CHARS); send smaller values"
            )
    return None


def _too_deep(bounds: ArgumentLimits) -> str:
    return (
        f"the arguments are nested deeper than {bounds.max_depth} levels "
        "(GIGI_TOOL_ARGS_MAX_DEPTH); send a flatter object"
    )


def truncate(text: str, limit: int | None = None) -> str:
    """At most ``limit`` characters (``GIGI_TOOL_ERROR_MAX_CHARS``), marked where it was cut."""
    limit = limit or limits().error_chars
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 1)
    return f"{text[:keep]}… ({len(text) - keep:,} more characters)"


def integers_as_int(schema: Any, value: Any, root: Any = None, depth: int = 0) -> Any:
    """``2.0`` where the schema says ``integer`` becomes ``2`` (JSON Schema accepts both).

    Follows ``properties``, ``additionalProperties``, ``items``, ``prefixItems``, ``allOf``
    and local ``$ref``s; returns ``value`` itself when nothing changes.
    """
    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > 64:
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = (
                target.get(part.replace("~1", "/").replace("~0", "~"), None)
                if isinstance(target, dict)
                else None
            )
        value = integers_as_int(target, value, root, depth + 1)
    for sub in schema.get("allOf") or ():
        value = integers_as_int(sub, value, root, depth + 1)
    if isinstance(value, float):
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds or []
        if "integer" in kinds and "number" not in kinds and value.is_integer():
            return int(value)
        return value
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        extra = schema.get("additionalProperties")
        changed = None
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is None:
                continue
            new = integers_as_int(sub, item, root, depth + 1)
            if new is not item:
                changed = changed if changed is not None else dict(value)
                changed[key] = new
        return value if changed is None else changed
    if isinstance(value, list):
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        items = schema.get("items")
        out = None
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items if isinstance(items, dict) else None
            if sub is None:
                continue
            new = integers_as_int(sub, item, root, depth + 1)
            if new is not item:
                out = out if out is not None else list(value)
                out[i] = new
        return value if out is None else out
    return value
