"""Fixtures for the Discord tests; the simulated server itself is ``discord_world``."""

from __future__ import annotations

import os
import pathlib

import pytest

from gigi_core.testing.backends import database_url, postgres_server  # noqa: F401


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """No test sees the developer's Gigi settings, token or data folder."""
    # Every GIGI_ variable, not a list: `gigi run --shards` sets some in os.environ for the
    # surface it starts, and a test that ran it must not leak them into the next one.
    for var in [v for v in os.environ if v.startswith("GIGI_")]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
