"""The writer's plain-DML fast path (``gigi_core.store.fast_writes``) and its batch linger:
what it stores is what SQLAlchemy stores, whatever it cannot run exactly goes through
SQLAlchemy, driver errors keep their SQLAlchemy class, and a write nobody awaits shares
the next awaited write's commit."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    event,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from gigi_core.store import fast_writes
from gigi_core.store.db import Database
from tests.conftest import _fresh_postgres_database

META = MetaData()


def _table(name: str) -> Table:
    return Table(
        name,
        META,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("name", String(32), unique=True),
        Column("at", DateTime(timezone=True)),
        Column("data", JSON),
        Column("flag", Boolean),
        Column("score", Float),
        Column("status", String(16)),
    )


FAST, PLAIN = _table("fast_rows"), _table("plain_rows")
STAMPED = Table(  # a Python-side default: SQLAlchemy must compute it per row
    "stamped_rows",
    META,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(32)),
    Column("made", String(32), default=lambda: "by-default"),
)
AT = datetime(2026, 12, 1, 13, 45, 7, 123456, tzinfo=UTC)
ROWS = [
    {"name": "a", "at": AT, "data": {"k": [1, 2]}, "flag": True, "score": 1.5, "status": "x"},
    {"name": "b", "at": AT, "data": ["z"], "flag": False, "score": None, "status": "y"},
    {"name": "c", "at": None, "data": None, "flag": None, "score": 3.0, "status": "x"},
]


@pytest.fixture(params=["sqlite", "postgresql"])
async def db(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'fast.db'}"
    else:
        url = _fresh_postgres_database(request.getfixturevalue("postgres_server"))
    database = Database(url)
    async with database.engine.begin() as conn:
        await conn.run_sync(META.create_all)
    yield database
    await database.close()


async def _rows(db: Database, table: Table) -> list[tuple]:
    async with db.engine.connect() as conn:
        result = await conn.execute(select(table).order_by(table.c.name))
        return [tuple(r) for r in result]


def _statuses(table: Table):
    """An UPDATE with a constant, a named parameter and an expanding IN list."""
    return (
        update(table)
        .where(table.c.status.in_(bindparam("expect", expanding=True)))
        .values(status=bindparam("new"), score=9.5)
    )


# Built once, like the journal's and the usage log's: the fast path compiles a statement
# it sees again (a statement built per call goes through SQLAlchemy).
STATEMENTS = {t.name: (insert(t), _statuses(t)) for t in (FAST, PLAIN)}
INSERT_STAMPED = insert(STAMPED)


def _leaves(db: Database) -> list:
    """The writer's compiled plans (or ``_NOT_FAST``), one per statement, keys and lengths."""
    return [
        plan
        for family in db.writer._plans.compiled.values()
        for plan in ([family] if family is fast_writes._NOT_FAST else family[1].values())
    ]


async def test_the_writer_stores_what_sqlalchemy_stores(db) -> None:
    """Inserts (one row, many rows) and an UPDATE with an IN list, through the writer and
    through SQLAlchemy's own connection: the same rows, types and row counts."""

    def writes(table: Table, suffix: str):
        add, statuses = STATEMENTS[table.name]
        rows = [{**row, "name": row["name"] + suffix} for row in ROWS]

        def fn(conn):
            conn.execute(add, rows[0])
            conn.execute(add, rows[1:])
            one = conn.execute(statuses, {"expect": ["x"], "new": "seen"}).rowcount
            two = conn.execute(statuses, {"expect": ["seen", "y"], "new": "z"}).rowcount
            return one, two

        return fn

    for suffix in ("1", "2"):  # the second time on the fast path (SQLite)
        counts = await db.writer.write(writes(FAST, suffix))
        async with db.engine.begin() as conn:
            plain_counts = await conn.run_sync(writes(PLAIN, suffix))
        assert counts == plain_counts
    assert counts == (2, 3)
    fast, plain = await _rows(db, FAST), await _rows(db, PLAIN)
    assert fast == plain and len(fast) == 6
    assert fast[0][2] is not None and fast[0][2].replace(tzinfo=UTC) == AT
    if db.dialect == "sqlite":  # the path exists on the writer thread only
        plans = _leaves(db)
        assert len(plans) == 3 and fast_writes._NOT_FAST not in plans  # IN of 1 and of 2


async def test_what_it_cannot_run_exactly_goes_through_sqlalchemy(db) -> None:
    """A Python-side default, RETURNING, no parameters and rows with different keys all
    reach SQLAlchemy, and come out as it makes them."""

    def writes(table: Table, suffix: str):
        add = STATEMENTS[table.name][0]

        def fn(conn):
            conn.execute(INSERT_STAMPED, [{"name": "d1"}, {"name": "d2"}])
            new_id = conn.execute(
                insert(table).returning(table.c.id), {"name": "r" + suffix}
            ).scalar_one()
            conn.execute(insert(table).values(name="literal" + suffix))
            conn.execute(add, [{"name": "k1" + suffix}, {"name": "k2" + suffix, "status": "s"}])
            return new_id

        return fn

    for suffix in ("1", "2"):
        new_id = await db.writer.write(writes(FAST, suffix))
        async with db.engine.begin() as conn:
            await conn.run_sync(writes(PLAIN, suffix))
        assert isinstance(new_id, int)
    assert [r[2] for r in await _rows(db, STAMPED)] == ["by-default"] * 8
    fast, plain = await _rows(db, FAST), await _rows(db, PLAIN)
    assert fast == plain and len(fast) == 8
    assert {r[1]: r[6] for r in fast}["k21"] is None  # SQLAlchemy keeps to the first row's keys
    if db.dialect == "sqlite":
        assert fast_writes._NOT_FAST in _leaves(db)  # the defaulted insert


async def test_a_driver_error_keeps_its_sqlalchemy_class(db) -> None:
    """A unique violation on the fast path is SQLAlchemy's IntegrityError, and only the
    failing write is lost."""
    add = STATEMENTS[FAST.name][0]
    await db.writer.write(lambda conn: conn.execute(add, {"name": "same"}))
    for _ in range(2):  # the second one on the fast path (SQLite)
        with pytest.raises(IntegrityError):
            await db.writer.write(lambda conn: conn.execute(add, {"name": "same"}))
    await db.writer.write(lambda conn: conn.execute(add, {"name": "other"}))
    assert [r[1] for r in await _rows(db, FAST)] == ["other", "same"]


async def test_an_engine_listener_sees_every_statement(tmp_path) -> None:
    """While a listener watches the writer's engine, statements go through SQLAlchemy, so
    counts (``bench/agent_turn.py --count``) and tests see them."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'watched.db'}")
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(META.create_all)
        add = STATEMENTS[FAST.name][0]
        for name in ("a", "b"):  # compiled for the fast path now
            await database.writer.write(lambda conn, name=name: conn.execute(add, {"name": name}))
        assert _leaves(database) and fast_writes._NOT_FAST not in _leaves(database)
        seen: list[str] = []
        event.listen(database.writer._engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
        await database.writer.write(lambda conn: conn.execute(add, {"name": "c"}))
        assert len(seen) == 1 and seen[0].startswith("INSERT INTO fast_rows")
    finally:
        await database.close()


async def test_a_submitted_write_shares_the_next_awaited_writes_commit(db) -> None:
    """Within the linger a submitted write waits for company: one commit for both; alone,
    it commits after the linger; drain and close start a lingering batch at once."""
    commits = [0]
    await db.writer.write(lambda conn: None)  # the writer's own engine exists now
    engine = db.writer._engine or db.engine.sync_engine
    event.listen(engine, "commit", lambda *_: commits.__setitem__(0, commits[0] + 1))
    db.writer.submit(lambda conn: conn.execute(insert(FAST), {"name": "first-row"}))
    for _ in range(3):
        await asyncio.sleep(0)  # the run waits for its model, which answers at once
    await db.writer.write(lambda conn: conn.execute(insert(FAST), {"name": "last-write"}))
    assert commits[0] == 1
    landed = []
    db.writer.submit(lambda conn: conn.execute(insert(FAST), {"name": "alone"}))
    db.writer._queue[-1][1].add_done_callback(lambda f: landed.append(f.exception()))
    await asyncio.sleep(db.writer.linger_seconds)  # alone: it commits once the linger ends
    for _ in range(500):  # a loaded machine may take its time; nothing else will join it
        if landed:
            break
        await asyncio.sleep(0.01)
    assert landed == [None] and commits[0] == 2
    db.writer.linger_seconds = 60.0
    db.writer.submit(lambda conn: conn.execute(insert(FAST), {"name": "drained"}))
    await asyncio.wait_for(db.writer.drain(), 5)
    db.writer.submit(lambda conn: conn.execute(insert(FAST), {"name": "closed"}))
    await asyncio.wait_for(db.close(), 5)
    reopened = Database(db.url)
    try:
        names = [r[1] for r in await _rows(reopened, FAST)]
    finally:
        await reopened.close()
    assert names == ["alone", "closed", "drained", "first-row", "last-write"]


async def test_a_statement_that_cannot_be_planned_is_still_written(db, monkeypatch) -> None:
    """Planning reads SQLAlchemy's compiler attributes; if that fails, the write goes
    through SQLAlchemy instead of failing."""

    def broken(*args):
        raise AttributeError("positiontup")

    monkeypatch.setattr(fast_writes, "_compile", broken)
    add = STATEMENTS[FAST.name][0]
    for name in ("p1", "p2", "p3"):
        await db.writer.write(lambda conn, name=name: conn.execute(add, {"name": name}))
    assert [r[1] for r in await _rows(db, FAST)] == ["p1", "p2", "p3"]
    if db.dialect == "sqlite":
        assert _leaves(db) == [fast_writes._NOT_FAST]
