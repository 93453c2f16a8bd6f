"""The plugin template: `gigi new-plugin` renders a package that installs, passes its
own tests, is ruff-clean and loads as `ok` next to the kernel in a fresh virtualenv."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from gigi_core.cli.new_plugin import new_plugin_command, template_path

REPO = Path(__file__).resolve().parents[1]
PLUGIN = "tmpl_probe"
ACTION = f"{PLUGIN}.hello"
PIP_TIMEOUT = 600
RUN_TIMEOUT = 180


def _clean_env(home: Path) -> dict[str, str]:
    """The outer environment minus what would leak the outer venv, Gigi or pytest settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIGI_", "PYTEST_", "PYTHON", "VIRTUAL_ENV", "COV_CORE"))
    }
    env.update(GIGI_HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def _run(
    cmd: Sequence[str | Path], *, env: dict[str, str], cwd: Path, timeout: int = RUN_TIMEOUT
) -> str:
    """Run a command; on failure show its output in the assertion. Returns stdout."""
    done = subprocess.run(
        [str(part) for part in cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {done.returncode}\n"
        f"--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
    )
    return done.stdout


def _action_names(entry: dict[str, object]) -> set[str]:
    actions = entry.get("actions") or []
    assert isinstance(actions, list)
    return {item if isinstance(item, str) else item["name"] for item in actions}


def test_the_template_is_found_from_the_source_checkout() -> None:
    found = template_path()
    assert (found / "copier.yml").is_file()
    assert (found / "template" / "{{package_name}}" / "gigi.yaml.jinja").is_file()


def test_new_plugin_rejects_a_bad_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(new_plugin_command, ["Bad-Name", "--dest", str(tmp_path / "p")])
    assert result.exit_code == 2
    assert "^[a-z][a-z0-9_]*$" in result.output
    assert not (tmp_path / "p").exists()


def test_new_plugin_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    result = CliRunner().invoke(new_plugin_command, ["demo", "--dest", str(tmp_path)])
    assert result.exit_code == 1
    assert "not empty" in result.output
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_new_plugin_without_copier_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "copier", None)  # makes `import copier` raise
    result = CliRunner().invoke(new_plugin_command, ["demo", "--dest", str(tmp_path / "p")])
    assert result.exit_code == 1
    assert 'pip install "gigi[author]"' in result.output


@pytest.mark.slow
def test_rendered_plugin_installs_passes_its_tests_and_loads(tmp_path: Path) -> None:
    env = _clean_env(tmp_path / "home")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], env=env, cwd=tmp_path)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python, gigi = bindir / "python", bindir / "gigi"
    pip = [python, "-m", "pip", "install", "--progress-bar", "off", "-q"]

    # The kernel as a wheel, as an author gets it, so the bundled template is exercised;
    # gigi-discord from the checkout, which the template's SimCord test needs.
    _run(
        [*pip, f"{REPO}[author]", REPO / "plugins" / "gigi-discord"],
        env=env,
        cwd=tmp_path,
        timeout=PIP_TIMEOUT,
    )
    project = tmp_path / "gigi-tmpl-probe"
    _run(
        [gigi, "new-plugin", PLUGIN, "--dest", project, "--defaults",
         "--description", 'Probe "quotes" \\ and: colons.'],
        env=env,
        cwd=tmp_path,
    )  # fmt: skip
    answers = (project / ".copier-answers.yml").read_text()
    assert f"plugin_name: {PLUGIN}" in answers
    assert "_plugin_template" in answers  # rendered from the wheel, not the checkout

    # The rendered code is ruff-clean under its own configuration.
    _run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], env=env, cwd=project)
    _run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], env=env, cwd=project
    )

    # Installed (not editable) with its test extra; its own tests pass against the kernel.
    _run([*pip, f"{project}[test]"], env=env, cwd=tmp_path, timeout=PIP_TIMEOUT)
    out = _run([bindir / "pytest", "-p", "no:cacheprovider"], env=env, cwd=project)
    passed = re.search(r"(\d+) passed", out)
    assert passed and int(passed.group(1)) >= 8, out  # the SimCord tests ran too
    assert " skipped" not in out and " failed" not in out, out

    listed = json.loads(_run([gigi, "plugins", "list", "--json"], env=env, cwd=tmp_path))
    entry = next((item for item in listed if item["name"] == PLUGIN), None)
    assert entry is not None, listed
    assert entry["status"] == "ok", entry
    assert not entry["error"], entry
    assert ACTION in _action_names(entry), entry

    # And the CLI's deterministic path runs its tool once a guild enables it.
    _run([gigi, "plugins", "enable", PLUGIN, "--guild", "g1"], env=env, cwd=tmp_path)
    out = _run(
        [gigi, "tools", "call", ACTION, "--guild", "g1", "--user", "u1",
         "--args", json.dumps({"name": "Ada"})],
        env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert "Hello, Ada!" in out
