"""The store's batched writer on its own thread with its own connection (a SQLite file,
also what ``sqlite://`` without a path becomes, and PostgreSQL): results, group commit,
failure isolation, drain, close."""

from __future__ import annotations

import asyncio
import logging
import threading
from types import SimpleNamespace

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, insert, select

import gigi_core.store.writer as writer_module
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
    """A Database with one table: SQLite (file or no path) or PostgreSQL, written on the
    writer's thread."""
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


async def test_a_failed_statement_logs_no_values(db, caplog) -> None:
    """A queued write whose statement fails is logged with its exception, whose text never
    holds the statement's values (they can be message text or sealed blobs)."""
    import traceback

    from sqlalchemy import text

    caplog.set_level(logging.ERROR, logger="gigi_core.store.writer")
    canary = "VALUECANARYqzx"

    def failing(conn):
        conn.execute(text("INSERT INTO no_such_table (a) VALUES (:a)"), {"a": canary})

    db.writer.submit(failing)
    await db.writer.drain()
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    logged = "".join(traceback.format_exception(*record.exc_info))
    assert "no_such_table" in logged and canary not in logged


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


def _busy_loop(seconds: float) -> None:
    """Hold the event loop (a turn's CPU work, exaggerated); other threads may run."""
    import time

    time.sleep(seconds)


async def test_a_batch_goes_on_while_the_event_loop_is_busy(db) -> None:
    """The writer's statements do not wait for the event loop between round trips: on the
    async engine a batch made one statement per loop iteration, so at 100 concurrent turns
    it crawled behind them (PostgreSQL c=100 fell below c=1)."""
    import time

    started = threading.Event()
    done: list[float] = []

    def many(conn):
        started.set()
        for n in range(50):
            conn.execute(insert(ITEMS).values(name=f"n{n}"))
        done.append(time.monotonic())
        return len(done)

    writing = asyncio.ensure_future(db.writer.write(many))
    assert await asyncio.to_thread(started.wait, 5)
    busy_until = time.monotonic() + 1.0
    _busy_loop(1.0)
    assert done and done[0] < busy_until
    assert await writing == 1
    assert len(await names(db)) == 50


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


def big_rows(n: int):
    """A write of ``n`` rows of 4 KB each: about ``n`` WAL pages."""
    rows = [{"name": "x" * 4000} for _ in range(n)]
    return lambda conn: conn.execute(insert(ITEMS), rows).rowcount


def wal_pages(path) -> float:
    """The WAL file's size in pages; a checkpoint's restart reuses the file from its start."""
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size / 4096 if wal.exists() else 0.0


async def test_commits_never_checkpoint_the_wal_the_checkpoint_thread_does(tmp_path) -> None:
    """SQLite's automatic checkpoint (fsyncs inside the commit crossing 1,000 pages) is off
    for the writer: 3,000 pages stay in the WAL until the checkpoint thread copies them."""
    path = tmp_path / "wal.db"
    database = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(ITEMS.metadata.create_all)
        writer = database.writer
        writer.checkpoint_seconds = 3600.0  # after the first batch's, no checkpoint for now
        await writer.write(add("first"))
        assert writer._checkpointing is not None
        await asyncio.wait([writer._checkpointing])
        for _ in range(3):
            assert await writer.write(big_rows(1000)) == 1000
        # With the automatic checkpoint, the WAL would have restarted after 1,000 pages.
        assert wal_pages(path) > 2500
        writer.checkpoint_seconds = 0.0
        await writer.write(add("last"))  # its batch starts the checkpoint thread
        await asyncio.wait([writer._checkpointing])
        busy, frames, copied = writer.last_checkpoint
        assert busy == 0 and frames > 2500 and copied == frames
        assert await names(database) == sorted(["first", "last", *["x" * 4000] * 3000])
    finally:
        await database.close()


async def test_the_first_batch_checkpoints_on_a_machine_booted_seconds_ago(
    tmp_path, monkeypatch
) -> None:
    """``time.monotonic()`` counts from boot: "never checkpointed" must not read as "just
    now" (CI's new machines were up for minutes, and the first checkpoint waited an hour)."""
    monkeypatch.setattr(writer_module, "time", SimpleNamespace(monotonic=lambda: 5.0))
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'boot.db'}")
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(ITEMS.metadata.create_all)
        database.writer.checkpoint_seconds = 3600.0
        await database.writer.write(add("first"))
        assert database.writer._checkpointing is not None
        await asyncio.wait([database.writer._checkpointing])
        assert database.writer.last_checkpoint is not None
    finally:
        await database.close()


async def test_a_slow_checkpoint_holds_up_no_write(tmp_path) -> None:
    """Writes commit while the checkpoint thread is busy (a slow fsync under disk load)."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'slow.db'}")
    release = threading.Event()
    started = threading.Event()
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(ITEMS.metadata.create_all)
        writer = database.writer
        real = writer._checkpoint

        def slow() -> None:
            started.set()
            release.wait(10)
            real()

        writer._checkpoint = slow
        writer.checkpoint_seconds = 0.0
        await writer.write(add("a"))
        assert await asyncio.to_thread(started.wait, 5)
        for name in ("b", "c", "d"):
            await asyncio.wait_for(writer.write(add(name)), 2)  # not behind the checkpoint
        assert not writer._checkpointing.done()
        release.set()
        await asyncio.wait([writer._checkpointing])
        assert writer.last_checkpoint is not None and writer.last_checkpoint[0] == 0
        assert await names(database) == ["a", "b", "c", "d"]
    finally:
        release.set()
        await database.close()
