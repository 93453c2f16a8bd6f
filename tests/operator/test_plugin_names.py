"""One name per plugin: what `gigi plugins list` shows is what `enable` accepts, or why not."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState

NATIVE = {"gigi", "llm", "permissions", "plugins"}


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice,openai")

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    return invoke


def rows(gigi, *extra: str) -> dict[str, dict]:
    listed = json.loads(gigi("plugins", "list", "--json", *extra).output)
    names = [r["name"] for r in listed]
    assert len(names) == len(set(names)), names  # one row per name
    return {r["name"]: r for r in listed}


def test_the_listed_names_are_the_names_enable_accepts(gigi) -> None:
    listed = rows(gigi)
    assert NATIVE | {"dice", "openai", "console"} <= set(listed)
    assert "native_tools" not in listed  # the module name is not a plugin name
    assert listed["plugins"]["module"] == "gigi_core.default_plugins.native_tools"
    assert listed["dice"]["actions"] == ["dice.roll"] and listed["dice"]["enableable"]
    for name, row in listed.items():
        result = gigi("plugins", "enable", name, "--guild", "g1")
        if row["enableable"]:
            assert result.exit_code == 0, (name, result.output)
        else:
            assert result.exit_code == 2, (name, result.output)
            assert row["note"], name  # the listing says why, too


def test_a_plugin_without_actions_says_why_it_cannot_be_enabled(gigi) -> None:
    openai = rows(gigi)["openai"]
    assert not openai["enableable"] and "providers" in openai["note"]
    result = gigi("plugins", "enable", "openai", "--guild", "g1")
    assert result.exit_code == 2
    assert "openai has no actions, so there is nothing to enable in a guild" in result.output
    assert "openai-compatible" in result.output and "gigi llm credential add" in result.output
    assert "no loaded plugin is named" not in result.output
    text = gigi("plugins", "list").output
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("openai "))
    assert "nothing to enable" in lines[at + 1]  # the note, under its row
    assert not any(x.startswith("native_tools") for x in text.splitlines())


def test_the_module_name_points_at_the_plugin_names(gigi) -> None:
    result = gigi("plugins", "enable", "native_tools", "--guild", "g1")
    assert result.exit_code == 2
    assert "native_tools is the module of the plugins gigi, llm, permissions, plugins" in (
        result.output
    )


def test_plugins_list_for_a_guild_shows_what_is_enabled_there(gigi) -> None:
    gigi("plugins", "enable", "dice", "--guild", "g1")
    gigi("plugins", "disable", "llm", "--guild", "g1")
    here = rows(gigi, "--guild", "g1")
    assert here["dice"]["enabled"] is True and here["llm"]["enabled"] is False
    assert here["plugins"]["enabled"] is True  # native: on until an admin turns it off
    assert here["openai"]["enabled"] is None  # nothing to enable
    elsewhere = rows(gigi, "--guild", "g2")
    assert elsewhere["dice"]["enabled"] is False
    text = gigi("plugins", "list", "--guild", "g1").output
    assert text.splitlines()[0].split()[:2] == ["NAME", "ENABLED"]
    assert next(x for x in text.splitlines() if x.startswith("dice ")).split()[1] == "yes"
    assert next(x for x in text.splitlines() if x.startswith("llm ")).split()[1] == "no"
    assert "enabled" not in json.loads(gigi("plugins", "list", "--json").output)[0]


async def test_the_console_says_why_too(tmp_path, monkeypatch) -> None:
    from gigi_core.default_plugins.console import ConsoleSurface
    from gigi_core.testing import open_test_kernel

    async with open_test_kernel(tmp_path, plugins=["dice", "openai"]) as kernel:
        out = io.StringIO()
        stdin = io.StringIO("/enable openai\n/enable native_tools\n/plugins\n")
        await asyncio.wait_for(ConsoleSurface(kernel, stdin=stdin, stdout=out).run(), 30)
    text = out.getvalue()
    assert "openai has no actions, so there is nothing to enable in a guild" in text
    assert "native_tools is the module of the plugins gigi, llm, permissions, plugins" in text
    assert "[n/a] openai" in text and "nothing to enable" in text
