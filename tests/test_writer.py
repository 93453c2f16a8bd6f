"""The store's batched writer on its thread path (a SQLite file, also what ``sqlite://``
without a path becomes) and its async-engine path (PostgreSQL): results, group commit,
failure isolation, drain, close."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, insert, select

from gigi_core.store.db import Database
from tests.conftest import _fresh_postgres_database

ITEMS = Table(
    "writer_items",
    MetaData(),
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(32)),
)


@pytest.fixture(params=["sqlite-file", "sqlite-memory", "postgresql"])
async def db(request, tmp_path):
    """A Database with one table: SQLite (file or no path) on the writer thread, PostgreSQL
    through the async engine."""
    if request.param == "sqlite-file":
        url = f"sqlite+aiosqlite:///{tmp_path / 'writer.db'}"
    elif request.param == "sqlite-memory":
        url = "sqlite+aiosqlite://"
    else:
        url = _fresh_postgres_database(request.getfixturevalue("postgres_server"))
    database = Database(url)
    async with database.engine.begin() as conn:
        await conn.run_sync(ITEMS.metadata.create_all)
    yield database
    await database.close()


def add(name: str):
    """A write that inserts one row and returns its id."""
    return lambda conn: conn.execute(insert(ITEMS).values(name=name)).inserted_primary_key[0]


def broken(conn):
    conn.execute(insert(ITEMS).values(name="broken"))
    raise ValueError("this write is broken")


async def names(db: Database) -> list[str]:
    async with db.engine.connect() as conn:
        return sorted((await conn.execute(select(ITEMS.c.name))).scalars())


async def test_write_returns_what_the_function_returns(db) -> None:
    """write() waits for the commit and hands back the function's own result."""
    first = await db.writer.write(add("a"))
    second = await db.writer.write(add("b"))
    assert isinstance(first, int) and second != first
    count = await db.writer.write(
        lambda conn: conn.execute(select(func.count()).select_from(ITEMS)).scalar_one()
    )
    assert count == 2
    assert await names(db) == ["a", "b"]


async def test_writes_queued_without_yielding_commit_in_one_transaction(db) -> None:
    """Several submit() calls and a write() made without yielding share one transaction."""
    seen = []

    def noting(name):
        def fn(conn):
            seen.append(conn.get_transaction())
            return add(name)(conn)

        return fn

    for name in ("a", "b", "c"):
        db.writer.submit(noting(name))
    await db.writer.write(noting("d"))
    assert len(seen) == 4 and all(t is seen[0] for t in seen)
    await db.writer.write(noting("e"))  # a later write is a transaction of its own
    assert seen[-1] is not seen[0]
    assert await names(db) == ["a", "b", "c", "d", "e"]


async def test_a_failing_write_fails_only_its_own_caller(db) -> None:
    """A write that raises in a batch gets its exception; the others in the batch commit once."""
    ok_a, bad, ok_b = await asyncio.gather(
        db.writer.write(add("a")),
        db.writer.write(broken),
        db.writer.write(add("b")),
        return_exceptions=True,
    )
    assert isinstance(bad, ValueError) and str(bad) == "this write is broken"
    assert isinstance(ok_a, int) and isinstance(ok_b, int)
    assert await names(db) == ["a", "b"]  # the broken write's own row was rolled back
    assert isinstance(await db.writer.write(add("c")), int)  # and the writer keeps working


async def test_a_failing_submitted_write_is_logged_and_the_rest_committed(db, caplog) -> None:
    """Nobody awaits a submitted write, so its failure is logged; its batch still commits."""
    caplog.set_level(logging.ERROR, logger="gigi_core.store.writer")
    results = []
    db.writer.submit(add("a"), on_result=results.append)
    db.writer.submit(broken, on_result=results.append)
    db.writer.submit(add("b"), on_result=results.append)
    await db.writer.drain()
    assert await names(db) == ["a", "b"]
    assert len(results) == 2
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.getMessage() == "a queued database write failed"
    assert isinstance(record.exc_info[1], ValueError)


async def test_drain_waits_for_submitted_writes(db) -> None:
    """drain() returns only once every write submitted before it is committed."""
    committed = []
    db.writer.submit(add("a"), on_result=committed.append)
    db.writer.submit(add("b"), on_result=committed.append)
    assert committed == []
    await db.writer.drain()
    assert len(committed) == 2  # checked before anything else gets to run
    assert await names(db) == ["a", "b"]


async def test_reads_alongside_queued_writes_lose_none_of_them(db) -> None:
    """Reads running while batches commit never roll back or lose a queued write."""

    async def reader():
        for _ in range(20):
            await names(db)

    async def writer():
        for i in range(20):
            db.writer.submit(add(f"w{i}"))
            await asyncio.sleep(0)

    await asyncio.gather(reader(), reader(), writer())
    await db.writer.drain()
    assert len(await names(db)) == 20


async def test_after_close_a_submit_is_dropped_and_a_write_raises(db, caplog) -> None:
    """close() lands queued writes; later ones are refused (submit warns, write raises)."""
    caplog.set_level(logging.WARNING, logger="gigi_core.store.writer")
    ran = []
    db.writer.submit(add("before"), on_result=ran.append)
    await db.close()
    assert len(ran) == 1
    db.writer.submit(lambda conn: ran.append("late"))
    assert "a write arrived after the database was closed" in caplog.text
    with pytest.raises(RuntimeError, match="closed"):
        await db.writer.write(lambda conn: ran.append("late"))
    assert "late" not in ran


async def test_sqlite_file_writes_run_off_the_event_loop(tmp_path) -> None:
    """On a SQLite file the transaction runs in the writer's thread, not on the event loop."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'thread.db'}")
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(ITEMS.metadata.create_all)
        loop_thread = threading.current_thread()
        threads = [await database.writer.write(lambda conn: threading.current_thread())]
        threads.append(await database.writer.write(lambda conn: threading.current_thread()))
        assert loop_thread not in threads
    finally:
        await database.close()
