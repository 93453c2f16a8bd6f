"""The legacy-subset schema converter, on the JSON Schema idioms pydantic and tools emit."""

from __future__ import annotations

import pytest
from gigi_gemini import to_openapi_schema


def test_refs_optionals_const_and_unsupported_keywords() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"Unit": {"enum": ["C", "F"], "description": "unit"}},
        "type": "object",
        "properties": {
            "unit": {"$ref": "#/$defs/Unit"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "kind": {"const": "weather"},
            "tags": {"type": "array", "items": {"type": "string", "examples": ["a"]}},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["unit"],
        "additionalProperties": False,
    }
    assert to_openapi_schema(schema) == {
        "type": "object",
        "properties": {
            "unit": {"enum": ["C", "F"], "description": "unit", "type": "string"},
            "note": {"type": "string", "nullable": True, "default": None},
            "kind": {"enum": ["weather"], "type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["unit"],
    }


def test_recursive_schema_is_rejected() -> None:
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    with pytest.raises(ValueError, match="recursive"):
        to_openapi_schema(schema)
