"""Mistyped plugin and action names get a "did you mean"; Tab completes them in a shell."""

from __future__ import annotations

import asyncio
import io

import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.testing import open_test_kernel


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), obj=CliState())

    return invoke


def completions(*words: str, incomplete: str) -> list[str]:
    complete = ShellComplete(cli, {"obj": CliState()}, "gigi", "_GIGI_COMPLETE")
    return [item.value for item in complete.get_completions(list(words), incomplete)]


@pytest.mark.parametrize("verb", ["enable", "disable", "config"])
def test_a_mistyped_plugin_name_suggests_the_close_one(gigi, verb: str) -> None:
    result = gigi("plugins", verb, "dise", "--guild", "g1")
    assert result.exit_code == 2
    assert "no loaded plugin is named 'dise'" in result.output
    assert "did you mean dice?" in result.output


def test_plugins_review_suggests_the_close_plugin_name(gigi) -> None:
    result = gigi("plugins", "review", "dise", "--guild", "g1")
    assert result.exit_code == 1
    assert "no plugin named 'dise' is loaded" in result.output
    assert "did you mean dice?" in result.output
    far = gigi("plugins", "review", "zzzz", "--guild", "g1")
    assert far.exit_code == 1 and "did you mean" not in far.output
    assert "dice" in far.output  # the loaded names, to pick from


def test_a_mistyped_action_name_suggests_the_close_one(gigi) -> None:
    result = gigi("tools", "call", "dice.rol", "--guild", "g1", "--user", "u1")
    assert result.exit_code == 2 and "did you mean dice.roll?" in result.output


def test_shell_completion_completes_plugin_and_action_names(gigi) -> None:
    assert completions("plugins", "enable", incomplete="di") == ["dice"]
    assert "dice" in completions("plugins", "disable", incomplete="")
    assert completions("plugins", "config", incomplete="perm") == ["permissions"]
    assert completions("plugins", "review", incomplete="di") == ["dice"]
    assert completions("tools", "call", incomplete="dice.") == ["dice.roll"]
    assert completions("manifest", "show", incomplete="di") == ["dice"]
    assert completions("audit", "list", "--action", incomplete="dice.") == ["dice.roll"]


def test_manifest_show_suggests_the_close_plugin_name(gigi) -> None:
    result = gigi("manifest", "show", "dise")
    assert result.exit_code == 1
    assert "no loaded plugin declares 'dise'" in result.output
    assert "did you mean dice?" in result.output


async def test_the_console_suggests_a_close_command(tmp_path) -> None:
    async with open_test_kernel(tmp_path, plugins=["dice"]) as kernel:
        out = io.StringIO()
        stdin = io.StringIO("/plugin\n/gigii channel status\n")
        await asyncio.wait_for(ConsoleSurface(kernel, stdin=stdin, stdout=out).run(), 30)
    text = out.getvalue()
    assert "Unknown command /plugin. Did you mean /plugins?" in text
    assert "Unknown command /gigii. Did you mean /gigi?" in text
