"""JSON Schema to Gemini's OpenAPI-subset ``Schema``, for the legacy ``parameters`` field.

By default the plugin sends full JSON Schema (``parametersJsonSchema`` /
``responseJsonSchema``), which Gemini accepts as is. Some models and proxies only
take the older ``parameters`` / ``responseSchema`` fields, which reject keywords such
as ``additionalProperties`` or ``$schema``; this converter keeps what that subset
understands and rewrites the common JSON Schema idioms it does not.
"""

from __future__ import annotations

from typing import Any

# Fields of Gemini's Schema object (OpenAPI 3.0 subset).
_KEEP = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
_MAX_REF_DEPTH = 16


def to_openapi_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Convert a JSON Schema object; ``$ref``s into ``$defs`` are inlined (no recursion)."""
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            defs.update(schema[key])
    return _convert(schema, defs, 0)


def _resolve(ref: str, defs: dict[str, Any]) -> dict[str, Any]:
    name = ref.rsplit("/", 1)[-1]
    target = defs.get(name)
    if not isinstance(target, dict):
        raise ValueError(f"cannot resolve $ref {ref!r} for Gemini's schema subset")
    return target


def _convert(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if not isinstance(node, dict):
        return node
    if depth > _MAX_REF_DEPTH:
        raise ValueError("schema is recursive or too deep for Gemini's schema subset")
    if isinstance(node.get("$ref"), str):
        merged = {**_resolve(node["$ref"], defs), **{k: v for k, v in node.items() if k != "$ref"}}
        return _convert(merged, defs, depth + 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _convert(sub, defs, depth + 1) for name, sub in value.items()}
        elif key == "items":
            out[key] = _convert(value, defs, depth + 1)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            out.update(_any_of(value, defs, depth))
        elif key == "const":
            out["enum"] = [value]
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            if len(kinds) < len(value):
                out["nullable"] = True
            if len(kinds) == 1:
                out["type"] = kinds[0]
            elif kinds:
                out["anyOf"] = [{"type": t} for t in kinds]
        elif key in _KEEP:
            out[key] = value
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    return out


def _any_of(options: list[Any], defs: dict[str, Any], depth: int) -> dict[str, Any]:
    """``anyOf: [X, {"type": "null"}]`` (Optional) becomes X with ``nullable``."""
    real = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
    converted = [_convert(o, defs, depth + 1) for o in real]
    nullable = len(real) < len(options)
    if len(converted) == 1 and isinstance(converted[0], dict):
        result = dict(converted[0])
    else:
        result = {"anyOf": converted}
    if nullable:
        result["nullable"] = True
    return result
