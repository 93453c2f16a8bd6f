"""PostgreSQL's pool pings a connection only after it sat idle: a busy connection costs no
round trip, an idle one the server dropped is replaced before any statement sees it."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from gigi_core.store import db as db_module
from tests.conftest import _fresh_postgres_database


async def _backend_pid(database: db_module.Database) -> int:
    async with database.session() as s:
        return int(await s.scalar(text("SELECT pg_backend_pid()")))


def _terminate(url: str, pid: int) -> None:
    dsn = db_module.libpq_dsn(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


async def test_an_idle_connection_the_server_dropped_is_replaced_unseen(
    postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_module, "PING_IDLE_AFTER", 0.0)  # every checkout counts as idle
    database = db_module.Database(_fresh_postgres_database(postgres_server))
    try:
        pid = await _backend_pid(database)
        _terminate(database.url, pid)
        assert await _backend_pid(database) != pid  # no error: the ping found it dead
    finally:
        await database.close()


async def test_a_recently_used_connection_is_not_pinged_and_one_failure_resets_the_pool(
    postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_module, "PING_IDLE_AFTER", 3600.0)
    database = db_module.Database(_fresh_postgres_database(postgres_server))
    try:
        pid = await _backend_pid(database)
        _terminate(database.url, pid)
        with pytest.raises(OperationalError):  # not pinged: the statement meets the cut
            await _backend_pid(database)
        assert await _backend_pid(database) != pid  # and the pool reconnected at once
    finally:
        await database.close()
