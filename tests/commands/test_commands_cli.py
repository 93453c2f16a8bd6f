"""`gigi commands list`: the command table in the CLI, as text and as JSON."""

from __future__ import annotations

import json

import yaml

from tests.commands.plugins import action, manifest


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
