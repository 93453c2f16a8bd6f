"""CI runs the README's test command, and the slow group is marked, not skipped."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_test_command() -> str:
    block = (ROOT / "README.md").read_text().split("# 2. Install the test extras")[1]
    return block.splitlines()[1].strip()


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    command = readme_test_command()
    assert command == "pip install -r requirements-dev.txt && pytest"
    lines = [x.strip() for x in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command in lines  # the same line: no extra flags that would change what runs


def test_the_slow_group_is_registered_and_not_deselected_by_default() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in config["markers"])
    assert not re.search(r"(^|\s)-m\b", config["addopts"])  # CI and the README run it too


def test_multi_process_and_real_package_tests_are_in_the_slow_group() -> None:
    for path in [
        "tests/scale/test_two_process_runs.py",
        "tests/scale/test_budget_processes.py",
        "tests/scale/test_shard_processes.py",
        "tests/scale/test_memory_workers.py",
        "tests/scale/test_knowledge_workers.py",
        "tests/scale/test_postgres_restart_processes.py",
        "tests/agent/test_fenced_processes.py",
        "tests/test_install_cli.py",
        "plugins/gigi-mcp/tests/test_mcp_real_servers.py",
    ]:
        assert "pytest.mark.slow" in (ROOT / path).read_text(), path
