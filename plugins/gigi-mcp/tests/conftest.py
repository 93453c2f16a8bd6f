"""Fixtures: both store backends (SQLite and embedded PostgreSQL, from gigi_core.testing)
and an isolated GIGI_HOME per test."""

from __future__ import annotations

import pathlib

import pytest

from gigi_core.testing import backends

# Both store backends, the fixtures every plugin's tests share (gigi_core.testing.backends).
database_url = backends.database_url
postgres_server = backends.postgres_server


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """No test sees the developer's Gigi settings, data folder or MCP servers."""
    for var in (
        "GIGI_DATABASE_URL",
        "GIGI_SECRET_KEY",
        "GIGI_SECRET_KEYS_RETIRED",
        "GIGI_LOAD_PLUGINS",
        "GIGI_BLOCK_PLUGINS",
        "GIGI_STRICT_PLUGINS",
        "GIGI_DISCORD_TOKEN",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))


@pytest.fixture
def home(tmp_path: pathlib.Path) -> pathlib.Path:
    """``GIGI_HOME/mcp``: where the servers file, pins and generated manifests live."""
    return tmp_path / "home" / "mcp"
