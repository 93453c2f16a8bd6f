"""Shared fixtures: both store backends (SQLite and embedded PostgreSQL) and kernels on them.

The backends are the testing kit's own (``gigi_core.testing.backends``), the ones plugin authors
use: one embedded PostgreSQL per worker with fsync off, a fresh database per test, dropped after.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gigi_core.testing import backends
from gigi_core.testing.backends import isolated_env  # noqa: F401  (autouse)
from gigi_core.testing.kernel import open_test_kernel

database_url = backends.database_url
postgres_server = backends.postgres_server


def _fresh_postgres_database(uri: str) -> str:
    """The SQLAlchemy URL of a new empty database (for tests that need a second one)."""
    return backends.fresh_postgres_database(uri)[1]


@pytest.fixture
async def kernel(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    """A kernel with the dice plugin on both backends."""
    async with open_test_kernel(tmp_path, plugins=["dice"], database_url=database_url) as k:
        yield k


from tests.plugin_factory import plugin_factory  # noqa: E402,F401  (fixture re-export)
