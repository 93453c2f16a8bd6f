"""Defensive parsing of tool-call arguments and ids (never run a bad call with {})."""

from __future__ import annotations

import pytest

from gigi_core.llm.parsing import make_tool_call, parse_arguments


def test_object_arguments_parse() -> None:
    assert parse_arguments('{"city": "Oslo"}') == ({"city": "Oslo"}, '{"city": "Oslo"}', None)
    args, raw, error = parse_arguments({"a": 1})
    assert args == {"a": 1} and raw == '{"a": 1}' and error is None


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "no arguments"),
        ("{not json", "not valid JSON"),
        ("null", "got null"),
        ("[1, 2]", "got list"),
        ("42", "got int"),
        ('"{\\"a\\": 1}"', "double-encoded"),
        ('{"x": NaN}', "not valid JSON"),
        ('{"x": Infinity}', "not valid JSON"),
        ([1], "got list"),
    ],
)
def test_bad_arguments_are_kept_as_parse_errors(raw: object, fragment: str) -> None:
    args, _raw, error = parse_arguments(raw)
    assert args is None
    assert error is not None and fragment in error


def test_huge_invalid_arguments_have_a_bounded_preview() -> None:
    _, raw, error = parse_arguments("{" + "x" * 10_000)
    assert len(raw) == 10_001 and error is not None and len(error) < 400


def test_make_tool_call_generates_missing_empty_and_duplicate_ids() -> None:
    seen: set[str] = set()
    a = make_tool_call(None, "t", "{}", seen_ids=seen)
    b = make_tool_call("", "t", "{}", seen_ids=seen)
    c = make_tool_call("call_1", "t", "{}", seen_ids=seen)
    d = make_tool_call("call_1", "t", "{}", seen_ids=seen)
    ids = [a.id, b.id, c.id, d.id]
    assert all(ids) and len(set(ids)) == 4 and c.id == "call_1"


def test_make_tool_call_keeps_raw_and_error() -> None:
    call = make_tool_call("c", "lookup", '{"q": ', seen_ids=set())
    assert not call.ok and call.arguments is None and call.raw_arguments == '{"q": '
    nameless = make_tool_call("c2", None, "{}", seen_ids=set())
    assert not nameless.ok and "no function name" in (nameless.parse_error or "")
