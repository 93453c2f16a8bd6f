"""`gigi tools call` shows what a confirmation approves; `gigi tools list` who may call what."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core.cli.common import CliState
from gigi_core.cli.main import cli

MANIFEST = """\
manifest_version: 1
plugin:
  name: wx
  version: 1.0.0
  description: Weather.
  data_statement: Stores nothing.
  capabilities:
    - {name: wx.use, description: Use it, default: everyone}
actions:
  - name: wx.alert
    description: Send an alert.
    safety: write
    capability: wx.use
    args:
      type: object
      properties: {city: {type: string}, token: {type: string, x-gigi-secret: true}}
      additionalProperties: false
  - name: wx.reset
    command: wx reset
    description: Reset the alerts.
    safety: write
    capability: wx.use
    confirm: never
    offer_to_model: false
    args: {type: object, properties: {}, additionalProperties: false}
"""

MODULE = """\
from pathlib import Path
from gigi_core import hookimpl

@hookimpl
def register_manifests(register):
    register(Path(__file__).parent / "gigi.yaml")

@hookimpl
def register_tools(register):
    register("wx.alert", alert)
    register("wx.reset", alert)

def alert(ctx, **args):
    return {"sent": True}
"""


@pytest.fixture
def gigi(tmp_path, monkeypatch, plugin_factory):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "wx")
    plugin_factory.make("wx", module=MODULE, manifest=MANIFEST)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    return invoke


def test_tools_call_waiting_for_confirmation_prints_the_arguments(gigi) -> None:
    assert gigi("plugins", "enable", "wx", "--guild", "g1").exit_code == 0
    args = json.dumps({"city": "Paris", "token": "tok-123"})
    result = gigi("tools", "call", "wx.alert", "--guild", "g1", "--user", "u1", "--args", args)
    assert result.exit_code == 4
    assert 'city: "Paris"' in result.output and "token: •••• (secret)" in result.output
    assert "tok-123" not in result.output


def test_tools_list_says_which_actions_the_model_may_call(gigi) -> None:
    rows = {r["name"]: r for r in json.loads(gigi("tools", "list", "--json").output)}
    assert rows["wx.alert"]["model"] is True and rows["wx.reset"]["model"] is False
    assert rows["gigi.channel.pause"]["model"] is False  # a command, never offered
    lines = gigi("tools", "list").output.splitlines()
    header = lines[0].split()
    assert header[1] == "MODEL"
    column = header.index("MODEL")
    by_name = {line.split()[0]: line.split() for line in lines[1:] if line.strip()}
    assert by_name["wx.alert"][column] == "yes"
    assert by_name["wx.reset"][column] == "direct-only"
