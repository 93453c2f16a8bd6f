"""Errors speak the syntax of the surface that shows them (``gigi_core.errors.Hint``)."""

from __future__ import annotations

import asyncio
import io

import pytest
from click.testing import CliRunner

from gigi_core import GigiError, Hint, ToolExecutionError
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.testing import open_test_kernel


def test_a_hint_picks_the_surface_variant_and_falls_back_to_its_default() -> None:
    hint = Hint("/x enable channel:", shell="gigi x enable --channel C", console="/x enable")
    error = ToolExecutionError("x is off", hint=hint)
    assert error.text_for("shell") == "x is off (gigi x enable --channel C)"
    assert error.text_for("console") == "x is off (/x enable)"
    assert error.text_for("discord") == str(error) == "x is off (/x enable channel:)"
    assert GigiError("plain", hint="fix it").text_for("shell") == "plain (fix it)"
    with pytest.raises(ValueError, match="unknown surface"):
        Hint("x", web="y")


def test_a_wrapped_error_keeps_the_variants() -> None:
    """The tool path re-raises a plugin's GigiError as a ToolExecutionError with its hint."""
    inner = GigiError("spent", hint=Hint("/llm quota", shell="gigi llm usage"))
    outer = ToolExecutionError(f"a.b: {inner.message}", hint=inner.hint)
    assert outer.text_for("shell") == "a.b: spent (gigi llm usage)"


async def test_the_console_without_a_model_points_at_the_fake_provider(tmp_path) -> None:
    async with open_test_kernel(tmp_path, plugins=[]) as kernel:
        out = io.StringIO()
        console = ConsoleSurface(kernel, stdin=io.StringIO("hello\n"), stdout=out)
        await asyncio.wait_for(console.run(), 30)
    text = out.getvalue()
    assert "no chat model is configured for guild console" in text
    assert "gigi llm credential add --owner guild:console" in text
    assert "run `gigi dev fake-provider`" in text


def test_gigi_ask_without_a_model_points_at_the_fake_provider(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "")
    result = CliRunner().invoke(cli, ["ask", "--guild", "g1", "hello"], obj=CliState())
    assert "no chat model is configured for guild g1" in result.output
    assert "run `gigi dev fake-provider`" in result.output


def test_a_sqlite_file_that_cannot_open_does_not_mention_a_server(tmp_path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    url = f"sqlite:///{blocker}/gigi.db"
    result = CliRunner().invoke(
        cli, ["--database-url", url, "plugins", "list", "--guild", "g1"], obj=CliState()
    )
    assert result.exit_code != 0
    assert "folder exists and is writable" in result.output
    assert "server is running" not in result.output
