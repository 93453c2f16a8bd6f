"""Manifest-declared commands run from the console: parsing, errors that name the field, permissions."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

from gigi_core import Actor
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.testing import open_test_kernel
from tests.commands.plugins import BOB, box


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
    assert output.count("box.put →") == 3 and "Error" not in output


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
    output = await drive(kernel, ["/crate put key=a", "/zzzz"])
    assert "Unknown command /crate. Did you mean /trace? /help lists the commands." in output
    assert "Unknown command /zzzz. /help lists the commands." in output  # nothing close


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
    assert "box.clear →" in output and plugin.calls == [("box.clear", {})], output
    await kernel.remove_grant("console", "box.admin", "user", BOB.id)
    output = await drive(kernel, ["/box clear"], actor=BOB)
    assert "Error: box.clear denied:" in output, output
    assert len(plugin.calls) == 1
    # the everyone-capability command works for bob without a grant
    assert "box.put →" in await drive(kernel, ["/box put key=k value=5"], actor=BOB)


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
    assert "box.hidden →" in await drive(kernel, ["/box hidden"])
    assert plugin.calls == [("box.hidden", {})]


# -- the table in the CLI and its digest ---------------------------------------------------
