"""``gigi tools call --args`` deeper than the argument depth limit: a usage error (exit 2)
naming --args and the limit, at every depth, never an internal error (issue 28)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.tools import bounds


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    assert run("plugins", "enable", "dice", "--guild", "1").exit_code == 0
    return run


def deep_text(depth: int) -> str:
    """``{"sides": 6, "x": {"a": ... {}}}`` as text (json.dumps itself recurses)."""
    return '{"sides": 6, "x": ' + '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1) + "}"


@pytest.mark.parametrize("depth", [33, 600, 990, 5000])
def test_deep_args_are_a_usage_error_naming_the_option_and_the_limit(gigi, depth) -> None:
    deep = deep_text(depth)
    result = gigi("tools", "call", "dice.roll", "--guild", "1", "--user", "2", "--args", deep)
    assert result.exit_code == 2, result.output
    limit = bounds.limits().max_depth
    assert "Error: --args" in result.output
    assert f"deeper than {limit} levels" in result.output
    assert "GIGI_TOOL_ARGS_MAX_DEPTH" in result.output
    assert "RecursionError" not in result.output


def test_args_at_the_limit_still_run(gigi) -> None:
    limit = bounds.limits().max_depth
    args = json.dumps({"sides": 6, "count": 1})
    ok = gigi("tools", "call", "dice.roll", "--guild", "1", "--user", "2", "--args", args)
    assert ok.exit_code == 0, ok.output
    # One level under the limit gets past --args to the action's own schema (exit 2 there).
    deep = json.dumps({"sides": 6, "x": nested(limit - 1)})
    result = gigi("tools", "call", "dice.roll", "--guild", "1", "--user", "2", "--args", deep)
    assert "--args" not in result.output and "deeper than" not in result.output
