"""`gigi ask` failures on stderr with `Error:`, and `gigi agent list`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    return invoke


def test_a_failed_ask_goes_to_stderr_with_error_and_exits_1(gigi) -> None:
    result = gigi("ask", "hello?")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: no chat model is configured for guild console")
    assert "(run run_" in result.stderr  # the run id still goes to stderr
    as_json = gigi("ask", "hello?", "--json")  # programs get the JSON and the exit code
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["status"] == "failed"


def test_agent_list_shows_runs_newest_first_and_filters(gigi) -> None:
    gigi("plugins", "enable", "dice", "--guild", "g1")
    gigi("tools", "call", "dice.roll", "--guild", "g1", "--user", "u1", "--args", '{"sides": 6}')
    gigi("ask", "hello?")  # guild console, fails: no model
    runs = json.loads(gigi("agent", "list", "--json").output)
    assert [(r["guild_id"], r["status"], r["kind"]) for r in runs] == [
        ("console", "failed", "console"),
        ("g1", "done", "direct"),
    ]
    assert {"id", "actor_id", "created_at", "termination_reason", "tool_calls"} <= set(runs[0])
    only = json.loads(gigi("agent", "list", "--guild", "g1", "--json").output)
    assert [r["guild_id"] for r in only] == ["g1"]
    failed = json.loads(gigi("agent", "list", "--status", "failed", "--json").output)
    assert [r["status"] for r in failed] == ["failed"]
    text = gigi("agent", "list").output
    assert text.splitlines()[0].split()[:4] == ["ID", "STATUS", "KIND", "GUILD"]
    assert runs[0]["id"] in text
    assert gigi("agent", "list", "--guild", "nowhere").output.strip() == "(none)"
    bad = gigi("agent", "list", "--status", "sleeping")
    assert bad.exit_code == 2
