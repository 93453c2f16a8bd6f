"""Manifest YAML: alias bombs are refused quickly; YAML integers become plain JSON numbers."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from gigi_core import Actor
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.errors import ManifestError
from gigi_core.manifest.loader import load_manifest
from gigi_core.testing import open_test_kernel
from gigi_core.yamlfile import YamlSyntaxError, load_all, plain
from tests.hardening.plugin_kit import MANIFEST, Kit

LAUGHS = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def bomb_manifest() -> str:
    text = MANIFEST.format(name="kit", args="{type: object}", config="{type: object}")
    return text.replace("actions:", "x-laughs:\n" + _indent(LAUGHS) + "actions:", 1).replace(
        "args: {type: object}}", "args: {type: object, x-lol: *i}}", 1
    )


def _indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def test_an_alias_bomb_is_refused_in_load_all() -> None:
    started = time.monotonic()
    with pytest.raises(YamlSyntaxError, match="GIGI_YAML_MAX_NODES"):
        load_all(LAUGHS)
    assert time.monotonic() - started < 2


def test_too_many_aliases_are_refused(monkeypatch) -> None:
    monkeypatch.setenv("GIGI_YAML_MAX_ALIASES", "3")
    with pytest.raises(YamlSyntaxError, match="GIGI_YAML_MAX_ALIASES"):
        load_all("a: &a 1\nb: [*a, *a, *a, *a]\n")
    assert load_all("a: &a 1\nb: [*a, *a, *a]\n") == [{"a": 1, "b": [1, 1, 1]}]


def test_a_recursive_alias_neither_hangs_nor_recurses() -> None:
    for text in ("a: &a [1, *a]\n", "a: &a {b: *a}\n"):
        try:
            plain(load_all(text))
        except YamlSyntaxError as exc:
            assert "refers to itself" in str(exc)


def test_a_manifest_alias_bomb_is_a_manifest_error(tmp_path) -> None:
    path = tmp_path / "gigi.yaml"
    path.write_text(bomb_manifest())
    started = time.monotonic()
    with pytest.raises(ManifestError, match="GIGI_YAML_MAX_NODES"):
        load_manifest(path)
    result = CliRunner().invoke(
        cli, ["manifest", "validate", str(path)], obj=CliState(), catch_exceptions=False
    )
    assert result.exit_code != 0 and "GIGI_YAML_MAX_NODES" in result.output
    assert time.monotonic() - started < 5


def test_deeply_nested_yaml_is_a_clear_error() -> None:
    with pytest.raises(YamlSyntaxError, match="nested too deeply"):
        load_all("a: " + "[" * 400 + "]" * 400 + "\n")


INTS = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 1_000, "default": 31}},
}


async def test_yaml_integers_load_as_plain_ints(tmp_path) -> None:
    """`0`, `1_000` and `0x1F` are ruamel ScalarInt/HexInt; the schema compiler needs int."""
    manifest = MANIFEST.format(
        name="kit",
        args="{type: object, properties: {n: {type: integer, minimum: 0, maximum: 1_000,"
        " default: 0x1F}}}",
        config="{type: object, properties: {limit: {type: integer, minimum: 0x0}}}",
    )
    kit = Kit(tmp_path, manifest=manifest)
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("kit", kit)]) as kernel:
        spec = kernel.registry.actions["kit.echo"]
        assert spec.args == INTS
        bounds = spec.args["properties"]["n"]
        assert [type(v) for v in bounds.values()] == [str, int, int, int]
        await kernel.enable_plugin("g1", "kit", config={"limit": 0})
        outcome = await kernel.call_tool("kit.echo", {}, actor=Actor(id="u"), guild_id="g1")
        assert outcome.result["args"] == {"n": 31}
