"""Manifest v1: valid files load; every kind of broken file is rejected as PATH:LINE: field: message."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gigi_core.errors import ManifestError
from gigi_core.manifest import Safety, load_manifest
from gigi_core.manifest.models import wire_name
from gigi_core.manifest.schema import committed_schema_path, manifest_json_schema

VALID = """\
manifest_version: 1
plugin:
  name: dice
  version: 0.1.0
  description: Roll dice.
  kernel: ">=0.1"
  data_statement: Stores nothing.
  config_schema: {type: object, properties: {token: {type: string, x-gigi-secret: true}}, additionalProperties: false}
  capabilities:
    - {name: dice.use, description: Roll dice, default: everyone}
actions:
  - name: dice.roll
    description: Roll dice and return the faces.
    safety: read_only
    capability: dice.use
    confirm: never
    public_dispatch: false
    args:
      type: object
      properties:
        sides: {type: integer, minimum: 2, maximum: 1000}
        count: {type: integer, minimum: 1, maximum: 100, default: 1}
      required: [sides]
      additionalProperties: false
    result: {type: object}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gigi.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(tmp_path: Path, text: str, **kwargs: object) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(ManifestError) as info:
        load_manifest(path, **kwargs)
    return info.value.problems


def test_valid_manifest_loads(tmp_path: Path) -> None:
    loaded = load_manifest(write(tmp_path, VALID))
    m = loaded.manifest
    assert m.plugin.name == "dice"
    assert m.actions[0].safety is Safety.read_only
    assert m.actions[0].needs_confirmation is False
    assert m.plugin.secret_fields() == {"token"}
    assert loaded.source.endswith("gigi.yaml")


def test_unknown_key_names_file_line_and_field(tmp_path: Path) -> None:
    text = VALID.replace(
        "  data_statement: Stores nothing.\n", "  data_statement: Stores nothing.\n  colour: red\n"
    )
    [problem] = problems_of(tmp_path, text)
    assert problem == f"{tmp_path / 'gigi.yaml'}:8: plugin.colour: unknown field"


def test_missing_required_field(tmp_path: Path) -> None:
    text = VALID.replace("  data_statement: Stores nothing.\n", "")
    [problem] = problems_of(tmp_path, text)
    assert problem.endswith(":2: plugin.data_statement: required field is missing")


def test_bad_safety_class(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path, VALID.replace("safety: read_only", "safety: harmless"))
    assert ":14: actions.0.safety:" in problem
    assert "read_only" in problem and "destructive" in problem


def test_action_outside_namespace(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path, VALID.replace("name: dice.roll", "name: coins.flip"))
    assert (
        ":12: actions.0.name: action 'coins.flip' is outside the plugin's namespace 'dice.'"
        in problem
    )


def test_duplicate_action_names(tmp_path: Path) -> None:
    actions = VALID[VALID.index("  - name: dice.roll") :]
    [problem] = problems_of(tmp_path, VALID + actions)
    assert "actions.1.name: duplicate action 'dice.roll'" in problem
    assert problem.split(":")[1] == "26"


def test_args_must_be_object_schema(tmp_path: Path) -> None:
    text = VALID.replace(
        "      type: object\n      properties:\n        sides",
        "      type: array\n      properties:\n        sides",
    )
    [problem] = problems_of(tmp_path, text)
    assert 'actions.0.args: args must be a JSON Schema with "type": "object"' in problem


def test_args_must_be_valid_draft_2020_12(tmp_path: Path) -> None:
    [problem] = problems_of(
        tmp_path, VALID.replace("sides: {type: integer", "sides: {type: integr")
    )
    assert (
        ":18: actions.0.args: not a valid JSON Schema (Draft 2020-12) at properties/sides/type"
        in problem
    )


def test_undeclared_unknown_capability(tmp_path: Path) -> None:
    [problem] = problems_of(
        tmp_path, VALID.replace("capability: dice.use", "capability: dice.admin")
    )
    assert ":15: actions.0.capability: capability 'dice.admin' is neither declared" in problem


def test_kernel_capability_needs_no_declaration(tmp_path: Path) -> None:
    text = VALID.replace("capability: dice.use", "capability: memory.read.guild")
    loaded = load_manifest(write(tmp_path, text), known_capabilities={"memory.read.guild"})
    assert loaded.manifest.actions[0].capability == "memory.read.guild"


def test_incompatible_kernel_version(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path, VALID.replace('kernel: ">=0.1"', 'kernel: ">=9"'))
    assert ":6: plugin.kernel: needs kernel '>=9' but this is Gigi 0.1.0" in problem


def test_invalid_kernel_specifier(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path, VALID.replace('kernel: ">=0.1"', 'kernel: "newest"'))
    assert "plugin.kernel: not a PEP 440 version specifier: 'newest'" in problem


def test_bad_plugin_name(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path, VALID.replace("  name: dice\n", "  name: Dice-Roller\n"))
    assert ":3: plugin.name:" in problem and "pattern" in problem


def test_wrong_manifest_version(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path, VALID.replace("manifest_version: 1", "manifest_version: 2"))
    assert problem.endswith(":1: manifest_version: Input should be 1")


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path, VALID.replace("  version: 0.1.0\n", "  version: [0.1.0\n"))
    assert problem.startswith(f"{tmp_path / 'gigi.yaml'}:")
    assert int(problem.split(":")[1]) >= 4


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    [problem] = problems_of(
        tmp_path, VALID.replace("  version: 0.1.0\n", "  version: 0.1.0\n  version: 0.2.0\n")
    )
    assert "duplicate" in problem.lower()


def test_not_a_mapping(tmp_path: Path) -> None:
    assert problems_of(tmp_path, "- just\n- a list\n") == [
        f"{tmp_path / 'gigi.yaml'}:1: a manifest must be one YAML mapping"
    ]


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read manifest"):
        load_manifest(tmp_path / "missing.yaml")


def test_several_problems_reported_together(tmp_path: Path) -> None:
    text = VALID.replace("safety: read_only", "safety: nope").replace("  version: 0.1.0\n", "")
    problems = problems_of(tmp_path, text)
    assert len(problems) == 2


def test_bad_config_schema(tmp_path: Path) -> None:
    text = VALID.replace("config_schema: {type: object,", "config_schema: {type: objekt,")
    [problem] = problems_of(tmp_path, text)
    assert "plugin.config_schema: not a valid JSON Schema" in problem


def test_destructive_always_confirms(tmp_path: Path) -> None:
    loaded = load_manifest(
        write(tmp_path, VALID.replace("safety: read_only", "safety: destructive"))
    )
    assert loaded.manifest.actions[0].needs_confirmation is True


@pytest.mark.parametrize(
    ("safety", "confirm", "expected"),
    [
        ("read_only", "policy", False),
        ("write", "policy", True),
        ("external", "policy", True),
        ("write", "never", False),
        ("destructive", "never", True),
        ("read_only", "always", True),
    ],
)
def test_confirmation_rule(tmp_path: Path, safety: str, confirm: str, expected: bool) -> None:
    text = VALID.replace("safety: read_only", f"safety: {safety}").replace(
        "confirm: never", f"confirm: {confirm}"
    )
    assert load_manifest(write(tmp_path, text)).manifest.actions[0].needs_confirmation is expected


def test_committed_schema_matches_models() -> None:
    committed = json.loads(committed_schema_path().read_text())
    assert committed == manifest_json_schema(), (
        "run: gigi manifest schema > manifests/manifest-v1.schema.json"
    )


def test_schema_validates_the_dice_manifest() -> None:
    import jsonschema_rs
    from ruamel.yaml import YAML

    root = Path(__file__).resolve().parent.parent
    data = YAML(typ="safe").load((root / "contrib/gigi-dice/gigi_dice/gigi.yaml").read_text())
    jsonschema_rs.validate(manifest_json_schema(), data)


def test_wire_names_are_provider_safe() -> None:
    import re

    for name in ("dice.roll", "memory.count", "a.b.c_d", "x" * 40 + "." + "y" * 40):
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", wire_name(name))
    assert wire_name("dice.roll") != wire_name("dice_roll")


def test_declared_capability_cannot_be_a_wildcard(tmp_path: Path) -> None:
    text = VALID.replace("{name: dice.use, description", "{name: dice.*, description")
    problems = problems_of(tmp_path, text)
    assert any("plugin.capabilities.0.name" in p for p in problems)


def test_cache_returns_the_same_manifest_and_ignores_corrupt_entries(tmp_path: Path) -> None:
    from gigi_core.manifest.cache import ManifestCache, clear_memory

    cache = ManifestCache(tmp_path / "cache")
    path = write(tmp_path, VALID)
    first = load_manifest(path, cache=cache).manifest
    [entry] = list((tmp_path / "cache").glob("*.json"))
    clear_memory()  # read the file back, as a new process would
    second = load_manifest(path, cache=cache).manifest
    assert second == first and second.actions[0].safety is Safety.read_only
    assert second.plugin.capabilities[0].default == "everyone"
    clear_memory()
    entry.write_text("{not json")
    assert load_manifest(path, cache=cache).manifest == first
    path.write_text(VALID.replace("safety: read_only", "safety: nope"))
    with pytest.raises(ManifestError):  # new text, new key: validated again
        load_manifest(path, cache=cache)


def test_channel_marks_only_on_top_level_properties(tmp_path: Path) -> None:
    text = VALID.replace(
        "sides: {type: integer, minimum: 2, maximum: 1000}",
        "sides: {type: integer, minimum: 2, maximum: 1000}\n        rooms: {type: array, items: {type: string, x-gigi-channel: true}}",
    )
    [problem] = problems_of(tmp_path, text)
    assert "x-gigi-channel is only checked on top-level properties" in problem
    top = VALID.replace(
        "count: {type: integer,",
        "room: {type: string, x-gigi-channel: true}\n        count: {type: integer,",
    )
    load_manifest(write(tmp_path, top))


@pytest.mark.parametrize(
    ("name", "message"),
    [("coins.use", "must start with 'dice.'"), ("dice.use", None)],
)
def test_declared_capabilities_live_in_the_plugin_namespace(
    tmp_path: Path, name: str, message
) -> None:
    text = VALID.replace("{name: dice.use, description", "{name: " + name + ", description")
    if message is None:
        load_manifest(write(tmp_path, text))
    else:
        assert any(message in p for p in problems_of(tmp_path, text))


def test_kernel_capabilities_cannot_be_redeclared(tmp_path: Path) -> None:
    text = (
        VALID.replace(
            "manifest_version: 1\nplugin:\n  name: dice",
            "manifest_version: 1\nplugin:\n  name: llm",
        )
        .replace("dice.", "llm.")
        .replace("{name: llm.use,", "{name: llm.usage.read,")
        .replace("capability: llm.use", "capability: llm.usage.read")
    )
    problems = problems_of(tmp_path, text, known_capabilities={"llm.usage.read"})
    assert any("is a kernel capability" in p for p in problems)


def test_zero_float_and_hex_bounds_are_plain_json_numbers(tmp_path: Path) -> None:
    """ruamel reads `0`, `0.5` and `0x10` as its own scalar types; schemas must still accept them."""
    text = VALID.replace(
        "sides: {type: integer, minimum: 2, maximum: 1000}",
        "sides: {type: number, minimum: 0, exclusiveMaximum: 0.5, multipleOf: 0x10}",
    )
    loaded = load_manifest(write(tmp_path, text))
    sides = loaded.manifest.actions[0].args["properties"]["sides"]
    assert sides == {"type": "number", "minimum": 0, "exclusiveMaximum": 0.5, "multipleOf": 16}
    assert [type(v) for v in sides.values()] == [str, int, float, int]
