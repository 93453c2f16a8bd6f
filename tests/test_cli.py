"""The gigi command as operators use it: real subprocesses for exit codes, CliRunner for the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.manifest.schema import manifest_json_schema

DICE_MANIFEST = Path(__file__).resolve().parent.parent / "contrib/gigi-dice/gigi_dice/gigi.yaml"


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    """Invoke the CLI in-process against a fresh GIGI_HOME with only the dice plugin."""
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), obj=CliState(), catch_exceptions=False)

    return invoke


def run_gigi(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", "from gigi_core.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )


def test_plugins_list_json(gigi) -> None:
    result = gigi("plugins", "list", "--json")
    assert result.exit_code == 0
    [dice] = [p for p in json.loads(result.output) if p["source"] != "default"]
    assert dice["name"] == "dice" and dice["status"] == "ok" and dice["error"] is None
    assert dice["version"] == "0.1.0" and dice["actions"] == ["dice.roll"]


def test_plugins_list_shows_failures(gigi, plugin_factory, monkeypatch) -> None:
    plugin_factory.make("broken", module="raise ImportError('missing thing')\n")
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice,broken")
    result = gigi("plugins", "list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("broken"))
    assert "failed" in lines[at] and "ImportError: missing thing" in lines[at + 1]


def test_plugins_list_puts_long_errors_under_their_row(gigi, plugin_factory, monkeypatch) -> None:
    """A long error wraps on indented lines; no row pushes the columns off screen."""
    long = "missing thing " + "because of a very long reason " * 12
    plugin_factory.make("broken", module=f"raise ImportError({long!r})\n")
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice,broken")
    result = gigi("plugins", "list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert max(len(x) for x in lines) <= 100, result.output
    at = next(i for i, x in enumerate(lines) if x.startswith("broken"))
    assert lines[at].split()[0] == "broken" and lines[at].split()[-1] == "failed"
    assert lines[at + 1].startswith("    note: ImportError: missing thing")
    shown = " ".join(x.strip() for x in lines[at + 1 :] if x.startswith("      "))
    assert "reason because of a very long reason" in shown
    dice = lines[next(i for i, x in enumerate(lines) if x.startswith("dice "))]
    assert dice.split()[:3] == ["dice", "0.1.0", "ok"]


def test_enable_config_disable_flow(gigi) -> None:
    assert (
        gigi(
            "plugins", "enable", "dice", "--guild", "g1", "--config-json", '{"max_count": 3}'
        ).exit_code
        == 0
    )
    shown = json.loads(gigi("plugins", "config", "dice", "--guild", "g1", "--json").output)
    assert shown == {
        "plugin": "dice",
        "guild": "g1",
        "enabled": True,
        "allow_external": False,
        "config": {"max_count": 3},
    }
    result = gigi(
        "tools",
        "call",
        "dice.roll",
        "--guild",
        "g1",
        "--user",
        "u1",
        "--args",
        '{"sides": 6, "count": 2}',
    )
    assert result.exit_code == 0 and len(json.loads(result.output)["faces"]) == 2
    assert gigi("plugins", "disable", "dice", "--guild", "g1").exit_code == 0
    result = gigi(
        "tools", "call", "dice.roll", "--guild", "g1", "--user", "u1", "--args", '{"sides": 6}'
    )
    assert result.exit_code == 3 and "not enabled in this server" in result.output


def test_bad_config_names_the_field(gigi) -> None:
    result = gigi("plugins", "enable", "dice", "--guild", "g1", "--config-json", '{"max_count": 0}')
    assert result.exit_code == 2
    assert "invalid config for dice: max_count:" in result.output
    result = gigi("plugins", "enable", "dice", "--guild", "g1", "--config-json", "{oops")
    assert result.exit_code == 2 and "--config-json is not valid JSON" in result.output


def test_grants_commands(gigi) -> None:
    gigi("plugins", "enable", "dice", "--guild", "g1")
    assert gigi("grants", "add", "dice.use", "--guild", "g1", "--role", "r1").exit_code == 0
    assert gigi("grants", "add", "dice.*", "--guild", "g1", "--user", "u7").exit_code == 0
    listed = json.loads(gigi("grants", "list", "--guild", "g1", "--json").output)
    assert [(g["capability"], g["subject_type"], g["subject_id"]) for g in listed] == [
        ("dice.*", "user", "u7"),
        ("dice.use", "role", "r1"),
    ]
    result = gigi("grants", "add", "dice.fly", "--guild", "g1", "--user", "u7")
    assert result.exit_code == 2 and "unknown capability 'dice.fly'" in result.output
    result = gigi("grants", "add", "dice.use", "--guild", "g1", "--user", "u7", "--role", "r1")
    assert result.exit_code == 2 and "exactly one of --user or --role" in result.output
    assert gigi("grants", "remove", "dice.use", "--guild", "g1", "--role", "r1").exit_code == 0
    assert gigi("grants", "remove", "dice.use", "--guild", "g1", "--role", "r1").exit_code == 2


def test_tools_list(gigi) -> None:
    rows = json.loads(gigi("tools", "list", "--json").output)
    native = [  # default plugins: native tools and the /gigi commands
        *(f"gigi.channel.{v}" for v in ("pause", "resume", "secure", "status")),
        *(f"gigi.privacy.{v}" for v in ("delete", "export", "info")),
        "llm.usage.guild",
        "permissions.check",
        "plugins.enabled",
        "plugins.plan",
    ]
    assert [r["name"] for r in rows] == ["dice.roll", *native]
    assert rows[0]["safety"] == "read_only" and rows[0]["capability"] == "dice.use"
    rows = json.loads(gigi("tools", "list", "--guild", "g1", "--json").output)
    assert [r["name"] for r in rows] == native  # native tools are on until an admin disables them


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--args", '{"sides": "six"}'],
            2,
            'invalid arguments for dice.roll: sides: "six" is not of type "integer"',
        ),
        (["--args", "{}"], 2, "sides"),
        (["--args", "not json"], 2, "--args is not valid JSON"),
    ],
)
def test_tools_call_bad_arguments(gigi, args, code, message) -> None:
    gigi("plugins", "enable", "dice", "--guild", "g1")
    result = gigi("tools", "call", "dice.roll", "--guild", "g1", "--user", "u1", *args)
    assert result.exit_code == code
    assert message in result.output


def test_tools_call_unknown_action_and_guild(gigi) -> None:
    gigi("plugins", "enable", "dice", "--guild", "g1")
    result = gigi("tools", "call", "dice.rol", "--guild", "g1", "--user", "u1")
    assert result.exit_code == 2 and "did you mean dice.roll" in result.output
    result = gigi(
        "tools", "call", "dice.roll", "--guild", "nowhere", "--user", "u1", "--args", '{"sides": 6}'
    )
    assert result.exit_code == 3 and "guild nowhere is unknown" in result.output


def test_manifest_validate_and_schema(gigi, tmp_path) -> None:
    assert gigi("manifest", "validate", str(DICE_MANIFEST)).exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        DICE_MANIFEST.read_text()
        .replace("safety: read_only", "safety: wild")
        .replace("  version: 0.1.0\n", "")
    )
    result = gigi("manifest", "validate", str(DICE_MANIFEST), str(bad))
    assert result.exit_code == 1
    problems = [line for line in result.output.splitlines() if line.startswith(str(bad))]
    assert len(problems) == 2 and all(":" in p for p in problems)
    assert json.loads(gigi("manifest", "schema").output) == manifest_json_schema()


def test_manifest_show_prints_what_the_kernel_loaded(gigi) -> None:
    shown = gigi("manifest", "show", "dice")
    assert shown.exit_code == 0
    assert shown.output.startswith(f"# {DICE_MANIFEST}") and "capability: dice.use" in shown.output
    data = json.loads(gigi("manifest", "show", "dice", "--json").output)
    assert data["plugin"]["name"] == "dice" and data["source"] == str(DICE_MANIFEST)
    assert [a["name"] for a in data["actions"]] == ["dice.roll"]
    missing = gigi("manifest", "show", "nope")
    assert missing.exit_code == 1 and "no loaded plugin declares 'nope'" in missing.output


def test_db_upgrade(gigi) -> None:
    result = gigi("db", "upgrade")
    assert result.exit_code == 0 and " is at kernel_" in result.output


def test_run_check_reports_plugins_and_surfaces(gigi) -> None:
    result = gigi("run", "--check")
    assert result.exit_code == 0
    assert "dice 0.1.0 [ok] dice.roll" in result.output
    assert "Surfaces: console" in result.output
    assert "Agent runs: durability turn" in result.output


def test_run_check_refuses_a_bad_durability_setting(tmp_path) -> None:
    """A misspelt GIGI_RUN_DURABILITY stops start-up, not the first request."""
    result = run_gigi(
        "run",
        "--check",
        env={
            "GIGI_HOME": str(tmp_path),
            "GIGI_LOAD_PLUGINS": "dice",
            "GIGI_RUN_DURABILITY": "fast",
        },
    )
    assert result.returncode == 2
    assert "GIGI_RUN_DURABILITY: unknown value 'fast'" in result.stderr


@pytest.mark.parametrize(
    ("var", "value"),
    [("GIGI_GUILD_PURGE_AFTER_DAYS", "soon"), ("GIGI_PRIVACY_HOOK_TIMEOUT_SECONDS", "0")],
)
def test_run_check_refuses_bad_privacy_settings(tmp_path, var: str, value: str) -> None:
    """Checked at start-up, not when a guild is first left or a member first asks."""
    env = {"GIGI_HOME": str(tmp_path), "GIGI_LOAD_PLUGINS": "dice", var: value}
    result = run_gigi("run", "--check", env=env)
    assert result.returncode == 2 and var in result.stderr, result.stderr


def test_run_without_surface_exits_cleanly(gigi, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_BLOCK_PLUGINS", "console")  # the default surface
    result = gigi("run")
    assert result.exit_code == 0 and "No surface to start" in result.output
    result = gigi("run", "--surface", "discord")
    assert result.exit_code == 1 and "surface 'discord' is not installed" in result.output


def test_secrets_generate_key(gigi) -> None:
    from gigi_core.store.sealing import Sealer

    key = gigi("secrets", "generate-key").output.strip()
    Sealer(key).seal("x", "y")  # a usable key


def test_unreachable_database_subprocess_has_no_traceback(tmp_path) -> None:
    env = {"GIGI_HOME": str(tmp_path), "GIGI_LOAD_PLUGINS": "dice"}
    result = run_gigi(
        "--database-url",
        "postgresql://gigi:pw@127.0.0.1:1/x",
        "plugins",
        "enable",
        "dice",
        "--guild",
        "1",
        env=env,
    )
    assert result.returncode == 1
    assert "Error: cannot reach the database" in result.stderr and "Traceback" not in result.stderr
    assert ":pw@" not in result.stderr
    debug = run_gigi(
        "--debug", "--database-url", "postgresql://gigi:pw@127.0.0.1:1/x", "db", "upgrade", env=env
    )
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_tool_failure_exit_code_subprocess(tmp_path) -> None:
    env = {"GIGI_HOME": str(tmp_path), "GIGI_LOAD_PLUGINS": "dice"}
    assert (
        run_gigi(
            "plugins",
            "enable",
            "dice",
            "--guild",
            "1",
            "--config-json",
            '{"max_count": 1}',
            env=env,
        ).returncode
        == 0
    )
    result = run_gigi(
        "tools",
        "call",
        "dice.roll",
        "--guild",
        "1",
        "--user",
        "2",
        "--args",
        '{"sides": 6, "count": 2}',
        env=env,
    )
    assert result.returncode == 5
    assert (
        "Error: dice.roll failed (ValueError)" in result.stderr and "Traceback" not in result.stderr
    )


def test_disable_never_enabled_writes_nothing(gigi) -> None:
    result = gigi("plugins", "disable", "dice", "--guild", "fresh")
    assert result.exit_code == 0 and "was not enabled" in result.output
    result = gigi(
        "tools", "call", "dice.roll", "--guild", "fresh", "--user", "u1", "--args", '{"sides": 6}'
    )
    assert "guild fresh is unknown" in result.output


def test_manifest_validate_knows_kernel_capabilities(gigi, tmp_path) -> None:
    path = tmp_path / "mem.yaml"
    path.write_text(
        DICE_MANIFEST.read_text().replace("capability: dice.use", "capability: memory.read.guild")
    )
    assert gigi("manifest", "validate", str(path)).exit_code == 0


def test_native_tool_works_in_a_guild_with_nothing_enabled(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")
    result = CliRunner().invoke(
        cli, ["tools", "call", "plugins.enabled", "--guild", "new", "--user", "u1"], obj=CliState()
    )
    assert result.exit_code == 0, result.output
    names = [p["name"] for p in json.loads(result.output)["plugins"]]
    assert "dice" not in names and "plugins" in names
