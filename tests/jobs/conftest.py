"""Fast worker timings for every jobs test (see tests/jobs/helpers.py for the helpers)."""

from __future__ import annotations

import pytest

from tests.jobs.helpers import FAST


@pytest.fixture(autouse=True)
def fast_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAST.items():
        monkeypatch.setenv(name, value)
