"""The console's readable form of tool results: fields, lists, tables, escaped text."""

from __future__ import annotations

from gigi_core.agent.contracts import Citation, Reply
from gigi_core.default_plugins.console_render import readable, reply_lines, result_lines


def test_a_status_dict_is_aligned_fields_with_nested_parts_indented() -> None:
    status = {"enabled": True, "channels": ["general", "dev"], "counts": {"messages": 12}}
    assert readable(status) == [
        "enabled   yes",
        "channels  general, dev",
        "counts:",
        "  messages  12",
    ]


def test_a_list_of_records_is_a_table_with_every_key_as_a_column() -> None:
    rows = [{"name": "memory", "on": True}, {"name": "knowledge", "on": False, "note": None}]
    assert readable(rows) == [
        "name       on   note",
        "memory     yes",
        "knowledge  no   -",
    ]


def test_long_lists_become_items_and_empty_values_say_so() -> None:
    long = ["x" * 40] * 3
    assert readable(long) == [f"- {'x' * 40}"] * 3
    assert readable([]) == ["(none)"] and readable({}) == ["(empty)"]
    assert result_lines("a.b", 5) == ["a.b → 5"]
    assert result_lines("a.b", {"k": ""}) == ["a.b →", '  k  ""']


def test_terminal_control_characters_in_results_are_escaped() -> None:
    (line,) = readable("red\x1b[31m\u202etext")
    assert "\x1b" not in line and "\u202e" not in line
    assert line == "red\\u001b[31m\\u202etext"


def test_raw_form_is_one_line_of_json() -> None:
    assert result_lines("a.b", {"k": [1, 2]}, raw=True) == ['a.b → {"k": [1, 2]}']


def test_a_reply_lists_tool_results_before_the_model_text() -> None:
    reply = Reply(text="Two dice.", citations=[Citation("dice.roll", {"faces": [1, 2]})])
    assert reply_lines(reply) == ["dice.roll →", "  faces  1, 2", "Two dice."]
