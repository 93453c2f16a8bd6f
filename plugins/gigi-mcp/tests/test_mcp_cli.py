"""``gigi mcp ...`` as an operator uses it, and the generated manifest the kernel loads."""

from __future__ import annotations

import json
import subprocess

import click
from click.testing import CliRunner
from mcp_helpers import python_server


def _cli() -> click.Group:
    from gigi_mcp.cli import add_commands

    @click.group()
    def root() -> None:
        pass

    add_commands(root)
    return root


def run(*args: str, input: str | None = None) -> click.testing.Result:
    return CliRunner().invoke(_cli(), list(args), input=input, catch_exceptions=False)


def test_add_list_approve_remove(home, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("EVIDENCE_VAR", str(tmp_path / "evidence"))
    added = run(
        "mcp", "add", "hostile", "--stdio", python_server("hostile.py"),
        "--env", "HOSTILE_DIR=EVIDENCE_VAR", "--json",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    tools = json.loads(added.output)["tools"]
    assert {t["status"] for t in tools} == {"pending"}
    assert {t["safety"] for t in tools} == {"external"}  # nothing believed before approval
    listed = json.loads(run("mcp", "list", "--json").output)
    assert listed[0]["env"] == ["HOSTILE_DIR"] and not listed[0]["approved"]
    assert str(tmp_path / "evidence") not in run("mcp", "list").output

    refused = CliRunner().invoke(_cli(), ["mcp", "approve", "hostile"], input="n\n")
    assert refused.exit_code != 0 and '"name": "lookup"' in refused.output
    approved = run("mcp", "approve", "hostile", "--yes")
    assert approved.exit_code == 0 and "approved 12 tool(s)" in approved.output
    again = run("mcp", "approve", "hostile", "--yes")
    assert "nothing changed since the last approval" in again.output
    as_json = json.loads(run("mcp", "approve", "hostile", "--json").output)
    assert as_json == {"server": "hostile", "approved": False, "tools": 12, "diff": ""}
    rows = {t["tool"]: t for t in json.loads(run("mcp", "list", "--json").output)[0]["tools"]}
    assert rows["pid"]["safety"] == "read_only" and rows["pid"]["status"] == "approved"

    shown = run("mcp", "show", "mcp_hostile")
    assert "name: mcp_hostile.lookup" in shown.output and "manifest_version: 1" in shown.output

    dupe = CliRunner().invoke(_cli(), ["mcp", "add", "hostile", "--stdio", "x", "--no-connect"])
    assert dupe.exit_code != 0 and "already in" in dupe.output
    bad = CliRunner().invoke(_cli(), ["mcp", "add", "Bad", "--stdio", "x", "--no-connect"])
    assert bad.exit_code != 0 and "server name 'Bad'" in bad.output
    removed = json.loads(run("mcp", "remove", "hostile", "--json").output)
    assert removed == {"removed": "hostile", "secrets_removed": []}
    assert json.loads(run("mcp", "list", "--json").output) == []
    assert not (home / "pins" / "hostile.json").exists()
    assert not (home / "manifests" / "mcp_hostile.yaml").exists()


def test_the_gigi_command_loads_the_generated_plugin(home) -> None:
    assert (
        run("mcp", "add", "time", "--stdio", "mcp-server-time --local-timezone UTC").exit_code == 0
    )
    out = subprocess.run(
        ["gigi", "plugins", "list", "--json"], check=True, capture_output=True, text=True
    ).stdout
    [mcp] = [p for p in json.loads(out) if p.get("module") == "gigi_mcp"]
    assert mcp["status"] == "ok" and mcp["name"] == "mcp_time"
    assert set(mcp["actions"]) == {"mcp_time.get_current_time", "mcp_time.convert_time"}
    shown = subprocess.run(
        ["gigi", "mcp", "show", "mcp_time"], check=True, capture_output=True, text=True
    ).stdout
    assert "capability: mcp_time.use" in shown and "default: admins" in shown


COLD = (
    "import sys\n"
    "from gigi_core.cli import main\n"
    "sys.argv = ['gigi', 'plugins', 'list', '--json']\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "heavy = sorted(m for m in ('pydantic', 'ruamel.yaml', 'jsonschema_rs', 'mcp') if m in sys.modules)\n"
    "print('HEAVY=' + ','.join(heavy))\n"
)


def _plugins_list() -> tuple[list[dict], str]:
    import sys

    out = subprocess.run(
        [sys.executable, "-c", COLD], check=True, capture_output=True, text=True
    ).stdout
    listed = json.loads(out[: out.rindex("HEAVY=")])
    return [p for p in listed if p.get("module") == "gigi_mcp"], out.rsplit("HEAVY=", 1)[1].strip()


def test_an_unchanged_catalogue_loads_cold_and_a_change_rebuilds_it(home) -> None:
    from gigi_mcp.config import McpConfig, ServerConfig, ToolOverride, save_config
    from gigi_mcp.pins import Pins, save_pins

    pins = Pins()
    pins.observe({"t": {"name": "t", "description": "d", "inputSchema": {"type": "object"}}})
    pins.approve()
    save_pins(home, "s", pins)
    save_config(home, McpConfig(servers={"s": ServerConfig(stdio=["x"])}))
    first, _ = _plugins_list()
    second, heavy = _plugins_list()
    assert first == second and second[0]["name"] == "mcp_s" and second[0]["status"] == "ok"
    assert heavy == ""  # read from the cache: no pydantic, YAML writer, schema compiler or SDK
    save_config(
        home,
        McpConfig(
            servers={"s": ServerConfig(stdio=["x"], tools={"t": ToolOverride(safety="write")})}
        ),
    )
    _plugins_list()
    assert "safety: write" in (home / "manifests" / "mcp_s.yaml").read_text()
