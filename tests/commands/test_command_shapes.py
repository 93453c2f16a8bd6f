"""Manifest-declared commands: a schema or table a chat surface cannot express fails at load."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gigi_core.commands import build_table, command_options
from gigi_core.commands.spec import CommandShapeError
from gigi_core.errors import PluginError
from gigi_core.plugins import LoadOptions, load_plugins
from tests.commands.plugins import BOX_ACTIONS, CommandPlugin, action, box, failure, load

# -- option typing: a schema a chat surface cannot express fails the plugin at load ---------


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "array", "items": {"type": "string"}}, "'array' cannot be a command option"),
        ({"type": "object"}, "'object' cannot be a command option"),
        ({"description": "anything at all"}, "'no type' cannot be a command option"),
        ({"type": "string", "x-gigi-type": "emoji"}, "x-gigi-type must be one of"),
        ({"type": "integer", "x-gigi-type": "user"}, 'needs "type": "string"'),
        ({"type": ["string", "null"]}, "cannot be a command option"),
    ],
    ids=["array", "object", "no-type", "bad-x-gigi-type", "mention-not-string", "type-list"],
)
def test_unexpressible_option_fails_the_plugin_naming_action_and_field(
    tmp_path, schema, words
) -> None:
    odd = action("box.odd", "box odd", {"ok": {"type": "string"}, "tags": schema})
    plugin = box(tmp_path, [action("box.fine", "box fine"), odd])
    error = failure(load(plugin), "box")
    # the second action, its field, and the command it would have been
    assert "actions.1.args.properties.tags: action box.odd, command /box odd: tags: " in error, (
        error
    )
    assert words in error, error


def test_unexpressible_option_is_a_start_up_error_when_strict(tmp_path) -> None:
    plugin = box(tmp_path, [action("box.odd", "box odd", {"tags": {"type": "array"}})])
    with pytest.raises(PluginError, match="tags"):
        load_plugins(LoadOptions(load=frozenset(), strict=True), extra=[("box", plugin)])


def test_the_same_schema_without_a_command_is_fine(tmp_path) -> None:
    """Arrays are fine for a tool the model calls; only a command needs typed options."""
    plugin = box(tmp_path, [action("box.odd", None, {"tags": {"type": "array"}})])
    assert load(plugin).registry.records["box"].status == "ok"


def test_more_than_25_choices_fail(tmp_path) -> None:
    ok = {"type": "string", "enum": [f"c{i}" for i in range(25)]}
    assert command_options({"properties": {"pick": ok}})[0].choices[-1] == "c24"
    many = {"type": "string", "enum": [f"c{i}" for i in range(26)]}
    plugin = box(tmp_path, [action("box.pick", "box pick", {"pick": many})])
    error = failure(load(plugin), "box")
    assert "pick" in error and "at most 25" in error, error


@pytest.mark.parametrize("bound", ["0", "0.5", "1_000"])
def test_a_literal_zero_or_float_bound_loads(tmp_path, bound) -> None:
    plugin = box(tmp_path, [action("box.n", "box n", {"n": {"type": "number", "minimum": 7}})])
    plugin.path.write_text(plugin.path.read_text().replace("minimum: 7", f"minimum: {bound}"))
    loaded = load(plugin)
    assert loaded.registry.records["box"].status == "ok", loaded.registry.records["box"].error


def test_choices_must_be_strings_or_numbers() -> None:
    with pytest.raises(CommandShapeError) as info:
        command_options({"properties": {"yes": {"type": "boolean", "enum": [True, False]}}})
    assert info.value.field == "yes"


@pytest.mark.parametrize("name", ["Key", "two words", "x" * 33, "dot.ted", ""])
def test_invalid_option_name_fails(tmp_path, name) -> None:
    plugin = box(tmp_path, [action("box.bad", "box bad", {name: {"type": "string"}})])
    error = failure(load(plugin), "box")
    assert "option names must be 1-32 lower-case letters" in error, error


def test_required_options_come_first_in_schema_order() -> None:
    options = command_options(
        {
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "integer"},
                "c": {"type": "boolean"},
                "d": {"type": "string", "x-gigi-type": "channel"},
            },
            "required": ["d", "b"],
        }
    )
    assert [(o.name, o.required) for o in options] == [
        ("b", True),
        ("d", True),
        ("a", False),
        ("c", False),
    ]
    assert [o.type for o in options] == ["integer", "channel", "string", "boolean"]


# -- the table: roots, reserved roots, groups and limits ---------------------------------


def test_two_plugins_sharing_a_root_the_later_one_fails(tmp_path) -> None:
    alpha = CommandPlugin(tmp_path, "alpha", [action("alpha.put", "shared put")])
    zeta = CommandPlugin(
        tmp_path,
        "zeta",
        [action("zeta.put", "shared take"), action("zeta.other", None)],
    )
    loaded = load(zeta, alpha)  # load order does not decide: names do
    error = failure(loaded, "zeta")
    assert "/shared is already used by plugin alpha" in error, error
    assert loaded.registry.records["alpha"].status == "ok"
    table, problems = build_table(loaded.registry)
    assert problems == {}
    assert table.roots["shared"] == "alpha"
    assert [c.action for c in table.for_plugin("alpha")] == ["alpha.put"]
    assert table.for_plugin("zeta") == [] and "zeta.other" not in loaded.registry.actions


def test_clash_is_a_start_up_error_when_strict(tmp_path) -> None:
    alpha = CommandPlugin(tmp_path, "alpha", [action("alpha.put", "shared put")])
    zeta = CommandPlugin(tmp_path, "zeta", [action("zeta.put", "shared take")])
    with pytest.raises(PluginError, match="plugin zeta failed to load: .*/shared"):
        load_plugins(
            LoadOptions(load=frozenset(), strict=True), extra=[("alpha", alpha), ("zeta", zeta)]
        )


@pytest.mark.parametrize("root", ["gigi", "llm", "help", "commands"])
def test_reserved_root_is_refused_for_a_third_party_plugin(tmp_path, root) -> None:
    plugin = box(tmp_path, [action("box.take", f"{root} take")])
    loaded = load(plugin)
    error = failure(loaded, "box")
    assert f"command root /{root} is reserved for Gigi itself" in error, error
    if root == "gigi":  # the kernel's own /gigi commands are untouched
        table, _ = build_table(loaded.registry)
        assert table.roots["gigi"] == "gigi" and ("gigi", "channel", "pause") in table.commands


def test_commands_of_one_plugin_must_share_a_root(tmp_path) -> None:
    plugin = box(tmp_path, [action("box.a", "box a"), action("box.b", "crate b")])
    assert "commands must share one root" in failure(load(plugin), "box")


@pytest.mark.parametrize(
    "commands",
    [("box", "box put"), ("box put", "box put one")],
    ids=["root-and-subcommand", "subcommand-and-group"],
)
def test_a_name_cannot_be_a_command_and_a_group(tmp_path, commands) -> None:
    plugin = box(tmp_path, [action(f"box.c{i}", c) for i, c in enumerate(commands)])
    assert "cannot be a command" in failure(load(plugin), "box")


def test_two_actions_with_the_same_command_fail(tmp_path) -> None:
    plugin = box(tmp_path, [action("box.a", "box put"), action("box.b", "box put")])
    assert "two actions declare the same command" in failure(load(plugin), "box")


@pytest.mark.parametrize("prefix", ["box s", "box group s"], ids=["subcommands", "group"])
def test_more_than_25_subcommands_in_one_group_fail(tmp_path, prefix) -> None:
    ok = box(tmp_path, [action(f"box.s{i}", f"{prefix}{i}") for i in range(25)])
    assert load(ok).registry.records["box"].status == "ok"
    (tmp_path / "more").mkdir()
    too_many = box(tmp_path / "more", [action(f"box.s{i}", f"{prefix}{i}") for i in range(26)])
    error = failure(load(too_many), "box")
    assert "has 26 subcommands; Discord allows 25" in error, error


# -- the console runs them ----------------------------------------------------------------


def test_digest_is_stable_and_changes_with_any_command_change(tmp_path) -> None:
    def digest(actions: list[dict[str, Any]], folder: str) -> str:
        (tmp_path / folder).mkdir()
        loaded = load(CommandPlugin(tmp_path / folder, "box", actions))
        assert loaded.registry.records["box"].status == "ok"
        return build_table(loaded.registry)[0].digest()

    def changed(**edits: Any) -> list[dict[str, Any]]:
        actions = json.loads(json.dumps(BOX_ACTIONS))
        for path, value in edits.items():
            target = actions[0]
            *parts, last = path.split("__")
            for part in parts:
                target = target[part]
            target[last] = value
        return actions

    base = digest(BOX_ACTIONS, "a")
    assert digest(BOX_ACTIONS, "b") == base  # same manifest, same digest
    assert digest(changed(description="Another description."), "c") != base
    assert digest(changed(command="box store"), "d") != base
    assert digest(changed(args__properties__key__description="Which key"), "e") != base
    assert digest(changed(args__required=["key"]), "f") != base
    assert digest(changed(args__properties__value__maximum=50), "g") != base
    # a change that no surface shows (the handler's result schema) does not re-sync
    assert digest(changed(result={"type": "object"}), "h") == base


def test_exclusive_integer_bounds_become_inclusive_option_bounds() -> None:
    """Discord's min/max are inclusive: an integer's exclusive bound moves by one."""
    from gigi_core.commands import command_options

    [n, x] = command_options(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
                "x": {"type": "number", "exclusiveMinimum": 0.5},
            },
        }
    )
    assert (n.minimum, n.maximum) == (1, 9)
    assert (x.minimum, x.maximum) == (0.5, None)
