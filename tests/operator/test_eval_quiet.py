"""`gigi eval run`: an expected crash in a passing case prints no log line; a failing case
shows the log lines it produced."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EVALS = Path(__file__).resolve().parents[2] / "evals"
CRASH = EVALS / "10_handler_raises.yaml"


def eval_run(*paths: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIGI_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-c", "from gigi_core.cli import main; main()", "eval", "run", *paths],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_passing_case_with_an_expected_crash_prints_no_log_line(tmp_path) -> None:
    result = eval_run(CRASH, home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "handler-raises-masked" in result.stdout and "1 passed, 0 failed" in result.stdout
    both = result.stdout + result.stderr
    assert "ERROR" not in both and "evalkit crashed on purpose" not in both


def test_a_failing_case_shows_its_log_lines(tmp_path) -> None:
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(CRASH.read_text().replace('reply: "The tool failed."', 'reply: "Nope."'))
    result = eval_run(wrong, home=tmp_path)
    assert result.returncode == 1
    assert "log: ERROR gigi_core.tools.invoke: tool evalkit.crash raised" in result.stdout
