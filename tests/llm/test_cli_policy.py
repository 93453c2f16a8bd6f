"""``gigi llm policy channel|role|show`` as operators use them: set, inherit, show where
each value came from, and refuse bad input naming the option to fix."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.store.sealing import generate_key


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "openai")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        result = runner.invoke(cli, ["llm", "policy", *args], obj=CliState(), input=input)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


def test_channel_values_inherit_and_show_says_from_where(gigi, tmp_path) -> None:
    made = gigi("channel", "--guild", "g1", "--place", "category:k1", "--answer", "replies")
    assert made.exit_code == 0, made.output
    assert "category k1 in guild g1" in made.output and "answers replies" in made.output
    note = tmp_path / "note.txt"
    note.write_text("Answer in French.", encoding="utf-8")
    gigi("channel", "--guild", "g1", "--place", "channel:c1", "--prompt-file", str(note))
    gigi("channel", "--guild", "g1", "--place", "thread:t1", "--purpose", "chat", "--model", "m-2")
    chain = ["--place", "thread:t1", "--place", "channel:c1", "--place", "category:k1"]
    shown = gigi("show", "--guild", "g1", *chain)
    assert shown.exit_code == 0, shown.output
    assert "personal keys off" in shown.output
    assert "answers: replies (from category)" in shown.output
    assert "instructions: 17 characters (from channel)" in shown.output
    assert "chat: model m-2 (from thread t1)" in shown.output
    data = json.loads(gigi("show", "--guild", "g1", *chain, "--json").output)
    assert data["personal_keys"] == "off"
    assert data["prompt"] == {"value": "Answer in French.", "from": {"kind": "channel", "id": "c1"}}
    # clearing goes back to the parent's (here: the default)
    gigi("channel", "--guild", "g1", "--place", "category:k1", "--clear", "answer")
    again = gigi("show", "--guild", "g1", *chain)
    assert "answers: mention (from default)" in again.output


def test_roles_are_limited_and_shown_with_their_budgets(gigi) -> None:
    out = gigi("role", "--guild", "g1", "--role", "r1", "--allow", "m-1, chat")
    assert out.exit_code == 0 and "role r1 in guild g1 may use: m-1, chat." in out.output
    shown = gigi("show", "--guild", "g1")
    assert "role r1 may use: m-1, chat" in shown.output
    cleared = gigi("role", "--guild", "g1", "--role", "r1", "--clear")
    assert "no model limit" in cleared.output
    assert "role r1" not in gigi("show", "--guild", "g1").output


def test_bad_input_names_what_to_fix(gigi) -> None:
    bad_place = gigi("channel", "--guild", "g1", "--place", "room:1", "--answer", "mention")
    assert bad_place.exit_code != 0 and "use one of thread, channel, forum" in bad_place.output
    every = gigi("channel", "--guild", "g1", "--place", "channel:c1", "--answer", "every")
    assert every.exit_code != 0 and "only applies to ambient channels" in every.output
    both = gigi("role", "--guild", "g1", "--role", "r1")
    assert both.exit_code != 0 and "--allow A,B or --clear" in both.output
    nothing = gigi("channel", "--guild", "g1", "--place", "channel:c1")
    assert nothing.exit_code != 0 and "nothing to change" in nothing.output
    long = gigi("channel", "--guild", "g1", "--place", "channel:c1", "--prompt", "x" * 1501)
    assert long.exit_code != 0 and "at most 1500 characters" in long.output
