"""What a new operator reads matches what Gigi does: commands, output, install lines, logs,
shell completion, and a grant example that changes something."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MINE = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
PUBLISHED = {"copier", "import-linter", "pip"}  # what PyPI really has, of what docs install


def _docs() -> list[Path]:
    return MINE


@functools.cache
def _plugin_commands() -> dict[str, click.Command]:
    """What installed plugins add through ``register_commands`` (``gigi memory ...``)."""
    from gigi_core.plugins import load_plugins

    group = click.Group("gigi")
    for impl in load_plugins().pm.hook.register_commands.get_hookimpls():
        impl.function(cli=group)
    return dict(group.commands)


def _code(text: str) -> list[str]:
    """Backticked spans and the lines of fenced blocks: where commands are written."""
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    blocks = [ln for b in re.findall(r"```[^\n]*\n(.*?)```", text, re.S) for ln in b.splitlines()]
    return [s.strip() for s in spans + blocks]


def _resolve(words: list[str]) -> str | None:
    """None when ``gigi WORDS`` names real commands; else the first word that is not one."""
    from gigi_core.cli import cli
    from gigi_core.cli.dev import COMMANDS as DEV  # also before gigi_core.cli.main adds it

    command: click.Command = cli
    for word in words:
        if not isinstance(command, click.Group):
            return None  # arguments from here on
        if word.startswith("-") or not re.fullmatch(r"[a-z][a-z-]*", word):
            return None
        extra = {**{c.name: c for c in DEV}, **_plugin_commands()} if command is cli else {}
        subs = {**command.commands, **extra}
        sub = subs.get(word)
        if sub is None:
            return word
        command = sub
    return None


def test_every_documented_gigi_command_exists() -> None:
    wrong = []
    for path in _docs():
        for line in _code(path.read_text("utf-8")):
            for match in re.finditer(r"(?:^|[\s|&;(])gigi((?: [a-z][\w.-]*)+)", line):
                bad = _resolve(match.group(1).split())
                if bad is not None:
                    wrong.append(f"{path.name}: `gigi{match.group(1)}` ({bad!r} is no command)")
    assert not wrong, wrong


def test_the_status_section_says_the_surfaces_landed() -> None:
    assert "as they land" not in (DOCS / "index.md").read_text("utf-8")


def test_install_lines_name_only_published_packages_or_a_checkout() -> None:
    wrong = []
    for path in _docs():
        for line in _code(path.read_text("utf-8")):
            for command in re.findall(r"pip install ([^&|;#]+)", line):
                words = command.split()
                for before, word in zip(["", *words], words, strict=False):
                    word = word.strip("'\"()")
                    local = word.startswith(("-", ".", "/")) or "/" in word
                    local = local or before in ("-r", "-e") or word.endswith(".txt")
                    if not local and word.split("[")[0].split("=")[0] not in PUBLISHED:
                        wrong.append(f"{path.name}: pip install {word}")
    assert not wrong, wrong  # unpublished packages install from a checkout (-e PATH)


def test_the_grant_example_grants_something_that_defaults_to_admins() -> None:
    from gigi_core.plugins import LoadOptions, load_plugins

    registry = load_plugins(LoadOptions(load=frozenset({"dice"}))).registry
    readme = (ROOT / "README.md").read_text("utf-8")
    granted = re.findall(r"gigi grants add (\S+)", readme)
    assert granted
    for capability in granted:
        assert registry.capability_default(capability) == "admins", capability


def _run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIGI_HOME": str(home), "GIGI_LOAD_PLUGINS": "dice"}
    env.pop("GIGI_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-c", "from gigi_core.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _kind(line: str) -> str:
    """``Surfaces: console`` -> ``Surfaces``; ``Gigi kernel on ...`` -> ``Gigi kernel``."""
    head = line.split(":", 1)[0] if ":" in line.split(" on ", 1)[0] else line
    return " ".join(head.split()[:2])


def test_the_documented_run_check_output_is_in_the_order_gigi_prints_it(tmp_path) -> None:
    text = (DOCS / "installing.md").read_text("utf-8")
    sample = text.split("$ gigi run --check\n", 1)[1].split("```", 1)[0]
    documented = [_kind(x) for x in sample.splitlines() if x and not x.startswith(" ")]
    result = _run("run", "--check", home=tmp_path)
    assert result.returncode == 0, result.stderr
    printed = [_kind(x) for x in result.stdout.splitlines() if x and not x.startswith(" ")]
    assert [k for k in printed if k in documented] == documented, (printed, documented)
    explained = text.split("$ gigi run --check\n", 1)[1]
    assert "durability turn" in explained.split("## ", 1)[0].split("```", 1)[1]  # said below


def test_logs_are_documented_where_and_at_what_level() -> None:
    text = (DOCS / "installing.md").read_text("utf-8")
    section = text.split("## Logs", 1)[1].split("\n## ", 1)[0]
    assert "stderr" in section and "WARNING" in section and "--debug" in section


def test_shell_completion_is_documented_and_works(tmp_path) -> None:
    text = (DOCS / "installing.md").read_text("utf-8")
    for shell in ("bash", "zsh", "fish"):
        assert f"_GIGI_COMPLETE={shell}_source gigi" in text
    env = {**os.environ, "GIGI_HOME": str(tmp_path), "_GIGI_COMPLETE": "bash_source"}
    script = subprocess.run(
        [sys.executable, "-c", "from gigi_core.cli import main; main()"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "_gigi_completion" in script.stdout


def test_every_contrib_plugin_has_tests() -> None:
    for plugin in sorted((ROOT / "contrib").iterdir()):
        if (plugin / "pyproject.toml").is_file():
            assert list((plugin / "tests").glob("test_*.py")), plugin.name


@pytest.mark.parametrize("name", ["console.md", "installing.md"])
def test_new_operator_pages_mention_the_fake_provider(name) -> None:
    assert "gigi dev fake-provider" in (DOCS / name).read_text("utf-8")


def test_tools_list_shows_each_capability_default(tmp_path, monkeypatch) -> None:
    """Needs the two-line change in gigi_core/cli/tools.py (a `default` field and column)."""
    import json

    from click.testing import CliRunner

    from gigi_core.cli import cli
    from gigi_core.cli.common import CliState

    monkeypatch.setenv("GIGI_HOME", str(tmp_path))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "dice")

    def gigi(*args: str) -> str:
        return CliRunner().invoke(cli, list(args), obj=CliState(), catch_exceptions=False).output

    rows = {r["name"]: r for r in json.loads(gigi("tools", "list", "--json"))}
    assert rows["dice.roll"]["default"] == "everyone"
    assert rows["llm.usage.guild"]["default"] == "admins"
    header = gigi("tools", "list").splitlines()[0].split()
    assert header[:5] == ["NAME", "MODEL", "SAFETY", "CAPABILITY", "DEFAULT"]
