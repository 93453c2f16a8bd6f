"""Concurrent agent runs in two real processes on one PostgreSQL: every run stored once,
every call with effects carried out once (``bench/scale_agent_runs.py`` counts the rows)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# In the slow group (still run by CI): several processes.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_processes_lose_and_duplicate_no_run(database_url) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "scale_agent_runs.py"),
            *("--runs", "10", "--database-url", database_url),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "answered done 20, distinct run ids 20, stored done 20, runs stored 20" in done.stdout
    assert "effects 20, distinct effects 20, step rows 80" in done.stdout
