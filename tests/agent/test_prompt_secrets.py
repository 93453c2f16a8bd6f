"""A confirmation prompt never shows a secret, whatever the schema's shape (issue 28, item 4)."""

from __future__ import annotations

from typing import Any

import pytest

from gigi_core.agent.render import MASKED, confirmation_arguments

SECRET = "hunter2"


def nested(depth: int, leaf: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A schema and a value ``depth`` objects deep, with ``token`` (marked ``leaf``) at the
    bottom."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"token": leaf, "note": {"type": "string"}},
    }
    value: dict[str, Any] = {"token": SECRET, "note": "plain"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
        value = {"a": value}
    return schema, value


@pytest.mark.parametrize("depth", [0, 14, 15, 16, 17, 18, 31, 40])
def test_a_deeply_nested_secret_is_masked(depth: int) -> None:
    schema, value = nested(depth, {"type": "string", "x-gigi-secret": True})
    text = confirmation_arguments(schema, value, value_chars=100_000, block_chars=100_000)
    assert SECRET not in text
    assert MASKED in text


def test_values_past_the_depth_limit_are_masked_not_shown() -> None:
    """Past the limit the renderer no longer knows what the schema says: it fails closed."""
    schema, value = nested(60, {"type": "string"})  # no secret anywhere, but too deep to tell
    text = confirmation_arguments(schema, value, value_chars=100_000, block_chars=100_000)
    assert SECRET not in text and MASKED in text
    shallow, value = nested(3, {"type": "string"})
    assert SECRET in confirmation_arguments(shallow, value)  # a plain value is still shown


def test_a_self_referencing_schema_masks_at_every_level() -> None:
    schema = {
        "$ref": "#/$defs/node",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "next": {"$ref": "#/$defs/node"},
                    "token": {"type": "string", "x-gigi-secret": True},
                },
            }
        },
    }
    value: dict[str, Any] = {"token": SECRET}
    for _ in range(20):
        value = {"next": value, "token": SECRET}
    text = confirmation_arguments(schema, value, value_chars=100_000, block_chars=100_000)
    assert SECRET not in text


def test_a_branching_reference_cycle_renders_quickly_and_masked() -> None:
    """``allOf`` of two references to the root at every level: no exponential walk."""
    schema = {
        "allOf": [{"$ref": "#"}, {"$ref": "#"}],
        "properties": {"token": {"x-gigi-secret": True}, "a": {"$ref": "#"}},
    }
    value: dict[str, Any] = {"token": SECRET}
    for _ in range(10):
        value = {"a": value}
    assert SECRET not in confirmation_arguments(schema, value, value_chars=100_000)


@pytest.mark.parametrize("word", ["items", "prefixItems"])
def test_tuple_items_are_masked_by_position(word: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                word: [{"type": "string"}, {"type": "string", "x-gigi-secret": True}],
            }
        },
    }
    text = confirmation_arguments(schema, {"pair": ["user", SECRET]})
    assert SECRET not in text
    assert text == f'pair: ["user", "{MASKED}"]'


def test_items_after_a_tuple_follow_additional_items() -> None:
    schema = {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "items": [{"type": "string"}],
                "additionalItems": {"x-gigi-secret": True},
            },
            "newer": {
                "type": "array",
                "prefixItems": [{"type": "string"}],
                "items": {"x-gigi-secret": True},
            },
        },
    }
    text = confirmation_arguments(schema, {"list": ["a", SECRET], "newer": ["b", SECRET]})
    assert SECRET not in text and '"a"' in text and '"b"' in text


@pytest.mark.parametrize(
    "leaf",
    [
        {"type": "string", "writeOnly": True},
        {"type": "string", "format": "password"},
        {"anyOf": [{"type": "string", "format": "password"}, {"type": "null"}]},
    ],
)
def test_json_schema_secret_annotations_are_masked(leaf: dict[str, Any]) -> None:
    """What MCP servers and other JSON Schema authors use to say "secret" is honoured."""
    schema, value = nested(1, leaf)
    text = confirmation_arguments(schema, value)
    assert SECRET not in text and MASKED in text and '"plain"' in text


def test_a_write_only_false_field_is_shown() -> None:
    schema, value = nested(0, {"type": "string", "writeOnly": False, "format": "email"})
    assert confirmation_arguments(schema, value) == f'token: "{SECRET}"\nnote: "plain"'


def test_conditional_and_unevaluated_subschemas_are_applied() -> None:
    schema = {
        "type": "object",
        "if": {"properties": {"kind": {"const": "key"}}},
        "then": {"properties": {"value": {"x-gigi-secret": True}}},
        "dependentSchemas": {"user": {"properties": {"pin": {"writeOnly": True}}}},
        "unevaluatedProperties": {"format": "password"},
        "properties": {"kind": {"type": "string"}, "user": {"type": "string"}},
    }
    args = {"kind": "key", "value": "s1", "user": "ann", "pin": "s2", "other": "s3"}
    text = confirmation_arguments(schema, args)
    assert "s1" not in text and "s2" not in text and "s3" not in text
    assert '"ann"' in text and '"key"' in text


def test_a_reference_it_cannot_follow_is_masked() -> None:
    schema = {
        "type": "object",
        "properties": {
            "t": {"$ref": "#key"},  # a plain-name anchor: not followed here
            "u": {"$ref": "#/$defs/user"},
            "n": {"type": "string"},
        },
        "$defs": {"key": {"$anchor": "key", "x-gigi-secret": True}, "user": {"type": "string"}},
    }
    text = confirmation_arguments(schema, {"t": SECRET, "u": "ann", "n": "x"})
    assert text == f't: {MASKED}\nu: "ann"\nn: "x"'
