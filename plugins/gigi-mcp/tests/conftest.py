"""Fixtures: both store backends (SQLite and embedded PostgreSQL, from gigi_core.testing)
and an isolated GIGI_HOME per test."""

from __future__ import annotations

import pathlib

import pytest

from gigi_core.testing import backends
from gigi_core.testing.backends import isolated_env  # noqa: F401  (autouse)

# Both store backends, the fixtures every plugin's tests share (gigi_core.testing.backends).
database_url = backends.database_url
postgres_server = backends.postgres_server


@pytest.fixture
def home(tmp_path: pathlib.Path) -> pathlib.Path:
    """``GIGI_HOME/mcp``: where the servers file, pins and generated manifests live."""
    return tmp_path / "home" / "mcp"
