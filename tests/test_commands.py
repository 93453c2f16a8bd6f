"""Manifest-declared commands: option typing, the table's limits, the console and the CLI."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gigi_core import Actor, hookimpl
from gigi_core.commands import build_table, command_options
from gigi_core.commands.spec import CommandShapeError
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.errors import PluginError
from gigi_core.plugins import LoadOptions, load_plugins
from gigi_core.testing import open_test_kernel

BOB = Actor(id="bob")  # a plain member (not an admin)


def action(
    name: str,
    command: str | None,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One manifest action dict; ``properties`` (and ``required``) become its args schema."""
    spec: dict[str, Any] = {
        "name": name,
        "description": f"The {name} action.",
        "safety": "read_only",
        "capability": name.split(".")[0] + ".use",
        "confirm": "never",
        "args": {
            "type": "object",
            "properties": properties or {},
            "additionalProperties": False,
            **({"required": required} if required else {}),
        },
    }
    if command is not None:
        spec["command"] = command
    spec.update(extra)
    return spec


class CommandPlugin:
    """An in-process plugin whose every action records its arguments and echoes them back."""

    def __init__(self, tmp_path: Path, name: str, actions: list[dict[str, Any]]) -> None:
        self.name = name
        self.path = tmp_path / f"{name}-gigi.yaml"
        self.path.write_text(yaml.safe_dump(manifest(name, actions), sort_keys=False))
        self.actions = [a["name"] for a in actions]
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        for name in self.actions:
            register(name, self._handler(name))

    def _handler(self, name: str):
        async def handler(ctx, **args):
            self.calls.append((name, args))
            return {"got": args}

        return handler


def manifest(name: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "manifest_version": 1,
        "plugin": {
            "name": name,
            "version": "0.0.1",
            "description": f"Test commands of {name}.",
            "data_statement": "Stores nothing.",
            "capabilities": [
                {"name": f"{name}.use", "description": "Use it", "default": "everyone"},
                {"name": f"{name}.admin", "description": "Admins only"},
            ],
        },
        "actions": actions,
    }


BOX_ACTIONS = [
    action(
        "box.put",
        "box put",
        {
            "key": {"type": "string", "description": "The key"},
            "value": {"type": "integer", "minimum": 1, "maximum": 100},
            "flag": {"type": "boolean"},
            "max-age": {"type": "integer"},
        },
        required=["key", "value"],
    ),
    action("box.clear", "box clear", capability="box.admin"),
    action("box.hidden", "box hidden", offer_to_model=False),
    action("box.plain", None),  # no command: a tool only
]


def box(tmp_path: Path, actions: list[dict[str, Any]] | None = None) -> CommandPlugin:
    return CommandPlugin(tmp_path, "box", actions or BOX_ACTIONS)


def load(*plugins: CommandPlugin) -> Any:
    """Load the plugins (not strict) as the kernel would; returns LoadedPlugins."""
    return load_plugins(LoadOptions(load=frozenset()), extra=[(p.name, p) for p in plugins])


def failure(loaded: Any, name: str) -> str:
    record = loaded.registry.records[name]
    assert record.status == "failed", f"{name} loaded: {record}"
    assert not loaded.registry.plugin_loaded(name)
    return record.error


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


@pytest.fixture
async def env(database_url, tmp_path, monkeypatch):
    """The box plugin enabled in the console guild; the operator is alice (admin)."""
    monkeypatch.setenv("USER", "alice")
    plugin = box(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", plugin)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("console", "box")
        yield kernel, plugin


async def drive(kernel: Any, lines: list[str], actor: Actor | None = None) -> str:
    out = io.StringIO()
    stdin = io.StringIO("".join(line + "\n" for line in lines))
    console = ConsoleSurface(kernel, stdin=stdin, stdout=out, actor=actor)
    await asyncio.wait_for(console.run(), 30)
    return out.getvalue()


async def test_console_runs_key_value_and_json_commands(env) -> None:
    kernel, plugin = env
    output = await drive(
        kernel,
        [
            "/box put key=a value=1",
            '/box put {"key": "b", "value": 2, "flag": true}',
            "/box put key='two words' value=3 flag=no max-age=7",
        ],
    )
    assert plugin.calls == [
        ("box.put", {"key": "a", "value": 1}),
        ("box.put", {"key": "b", "value": 2, "flag": True}),
        ("box.put", {"key": "two words", "value": 3, "flag": False, "max-age": 7}),
    ], output
    assert output.count("box.put → ") == 3 and "Error" not in output


async def test_console_reports_missing_options_with_usage(env) -> None:
    kernel, plugin = env
    output = await drive(kernel, ["/box put value=1"])
    assert (
        "Missing key. Usage: /box put key=<string> value=<integer> [flag=<boolean>] "
        "[max-age=<integer>]" in output
    ), output
    assert plugin.calls == []


async def test_console_unknown_option_names_the_options(env) -> None:
    kernel, plugin = env
    output = await drive(kernel, ["/box put key=a value=1 colour=red", "/box put key=a 1"])
    assert "unknown option 'colour' (options: key, value, flag, max-age)" in output, output
    assert "'1' is not NAME=VALUE (options: key, value, flag, max-age)" in output, output
    assert plugin.calls == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("/box put key=a value=lots", "box.put: value: 'lots' is not an integer"),
        ("/box put key=a value=1 flag=maybe", "box.put: flag: 'maybe' is not true or false"),
        ("/box put key=a value=1 max-age=old", "box.put: max-age: 'old' is not an integer"),
        ('/box put {"key": "a", "value": "1"}', 'box.put: value: "1" is not of type "integer"'),
        ("/box put key=a value=101", "box.put: value: 101 is greater than the maximum of 100"),
        ('/box put {"key": ', "box.put: (arguments): not valid JSON"),
    ],
)
async def test_console_conversion_errors_name_the_field(env, line, message) -> None:
    kernel, plugin = env
    output = await drive(kernel, [line])
    assert f"Error: invalid arguments for {message}" in output, output
    assert plugin.calls == []


async def test_console_unknown_command_is_one_sentence(env) -> None:
    kernel, _ = env
    output = await drive(kernel, ["/crate put key=a"])
    assert "Unknown command /crate. /help lists the commands." in output


async def test_console_lists_commands(env) -> None:
    kernel, _ = env
    output = await drive(kernel, ["/commands"])
    assert "/box put key=<string> value=<integer> [flag=<boolean>] [max-age=<integer>]" in output
    assert "/gigi channel pause [channel=<channel>]" in output
    assert "box.plain" not in output and "box plain" not in output


async def test_command_where_the_plugin_is_disabled_is_refused_in_a_sentence(env) -> None:
    kernel, plugin = env
    await kernel.disable_plugin("console", "box")
    output = await drive(kernel, ["/box put key=a value=1"])
    assert "Error: box.put denied: plugin box is not enabled in this server" in output, output
    assert plugin.calls == []


async def test_non_admin_is_denied_an_admin_command_on_every_invocation(env) -> None:
    kernel, plugin = env
    output = await drive(kernel, ["/box clear"], actor=BOB)
    assert "Error: box.clear denied:" in output and "box.admin" in output, output
    assert plugin.calls == []
    await kernel.add_grant("console", "box.admin", "user", BOB.id)
    output = await drive(kernel, ["/box clear"], actor=BOB)
    assert "box.clear → " in output and plugin.calls == [("box.clear", {})], output
    await kernel.remove_grant("console", "box.admin", "user", BOB.id)
    output = await drive(kernel, ["/box clear"], actor=BOB)
    assert "Error: box.clear denied:" in output, output
    assert len(plugin.calls) == 1
    # the everyone-capability command works for bob without a grant
    assert "box.put → " in await drive(kernel, ["/box put key=k value=5"], actor=BOB)


async def test_offer_to_model_false_is_never_offered_but_runs_as_a_command(env) -> None:
    kernel, plugin = env
    for actor in (BOB, Actor(id="alice", is_admin=True)):
        offered = {a.name for a in await kernel.policy.offerable(actor, "console")}
        assert "box.put" in offered and "box.plain" in offered
        assert "box.hidden" not in offered
        assert not offered & {
            "gigi.channel.pause",
            "gigi.privacy.export",
            "gigi.privacy.delete",
        }
    assert "box.hidden → " in await drive(kernel, ["/box hidden"])
    assert plugin.calls == [("box.hidden", {})]


# -- the table in the CLI and its digest ---------------------------------------------------


def test_commands_list_json(tmp_path, plugin_factory, monkeypatch) -> None:
    from click.testing import CliRunner

    from gigi_core.cli import cli
    from gigi_core.cli.common import CliState

    plugin_factory.make(
        "crate",
        manifest=yaml.safe_dump(
            manifest(
                "crate",
                [
                    action("crate.put", "crate put", {"key": {"type": "string"}}),
                    action("crate.wipe", "crate wipe", capability="crate.admin"),
                    action("crate.tool", None),
                ],
            )
        ),
        module=(
            "from pathlib import Path\n"
            "from gigi_core import hookimpl\n\n"
            "@hookimpl\n"
            "def register_manifests(register):\n"
            "    register(Path(__file__).parent / 'gigi.yaml')\n\n"
            "@hookimpl\n"
            "def register_tools(register):\n"
            "    for name in ('crate.put', 'crate.wipe', 'crate.tool'):\n"
            "        register(name, lambda ctx, **kw: kw)\n"
        ),
    )
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "crate")
    result = CliRunner().invoke(
        cli, ["commands", "list", "--json"], obj=CliState(), catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    rows = {r["command"]: r for r in json.loads(result.output)}
    assert rows["crate put"]["action"] == "crate.put"
    assert rows["crate put"]["capability"] == "crate.use"
    assert rows["crate put"]["admin_default"] is False
    assert rows["crate put"]["options"][0]["name"] == "key"
    assert rows["crate wipe"]["capability"] == "crate.admin"
    assert rows["crate wipe"]["admin_default"] is True
    assert rows["gigi privacy delete"]["action"] == "gigi.privacy.delete"
    assert rows["gigi channel pause"]["capability"] == "gigi.channel.manage"
    assert not any(r["action"] == "crate.tool" for r in rows.values())
    text = CliRunner().invoke(cli, ["commands", "list"], obj=CliState(), catch_exceptions=False)
    assert "/crate put [key=<string>]" in text.output and "admins" in text.output


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
