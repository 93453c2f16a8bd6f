"""Meta-tests that keep the docs honest, in datasette's style.

Every hook has exactly one heading in docs/hooks.md and a ``test_hook_<name>`` test;
every manifest schema property is documented in docs/manifest.md; every ``gigi``
command is mentioned somewhere in docs/.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from gigi_core import hookspecs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TESTS = ROOT / "tests"


def hook_names() -> list[str]:
    """Every function in gigi_core.hookspecs marked as a ``gigi`` hookspec."""
    return sorted(
        name
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, "gigi_spec")
    )


HOOKS = hook_names()


def hook_headings() -> list[str]:
    """The leading identifier of every ``## `` heading in docs/hooks.md."""
    text = (DOCS / "hooks.md").read_text("utf-8")
    return [m.group(1) for m in re.finditer(r"^## +`?([A-Za-z_][A-Za-z0-9_]*)", text, re.M)]


def test_hookspecs_are_found() -> None:
    assert "register_tools" in HOOKS and "check_tool_call" in HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_one_heading(hook: str) -> None:
    count = hook_headings().count(hook)
    assert count == 1, f"docs/hooks.md has {count} '## {hook}(...)' headings; expected 1"


def test_no_heading_for_a_hook_that_does_not_exist() -> None:
    extra = sorted(set(hook_headings()) - set(HOOKS))
    assert not extra, f"docs/hooks.md documents hooks that gigi_core.hookspecs lacks: {extra}"


def _test_sources() -> str:
    return "\n".join(p.read_text("utf-8") for p in sorted(TESTS.rglob("*.py")))


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook: str) -> None:
    found = re.search(rf"def test_hook_{hook}\b", _test_sources()) is not None
    assert found, f"no test named test_hook_{hook} under tests/"


def _schema_property_names(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            yield from props
        for value in node.values():
            yield from _schema_property_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_property_names(value)


def manifest_properties() -> list[str]:
    from gigi_core.manifest.schema import manifest_json_schema

    return sorted(set(_schema_property_names(manifest_json_schema())))


@pytest.mark.parametrize("name", manifest_properties())
def test_every_manifest_field_is_documented(name: str) -> None:
    text = (DOCS / "manifest.md").read_text("utf-8")
    assert f"`{name}`" in text, f"docs/manifest.md never mentions `{name}`"


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        yield " ".join(path)
        if isinstance(command, click.Group):
            yield from _command_paths(command, path)


def cli_commands() -> list[str]:
    from gigi_core.cli import cli

    return list(_command_paths(cli))


def test_cli_commands_are_found() -> None:
    assert {"plugins", "plugins list", "tools call"} <= set(cli_commands())


@pytest.mark.parametrize("command", cli_commands())
def test_every_cli_command_is_documented(command: str) -> None:
    docs = "\n".join(p.read_text("utf-8") for p in sorted(DOCS.glob("*.md")))
    pattern = r"\bgigi " + re.escape(command).replace(r"\ ", " ") + r"(?![\w-])"
    found = re.search(pattern, docs) is not None
    assert found, f"no page under docs/ mentions `gigi {command}`"
