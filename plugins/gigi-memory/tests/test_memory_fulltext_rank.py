"""The full-text path's ranking: best first, through the read filters, and on SQLite ordered
by FTS5 itself (the ledger is read for the hits kept, not for every match before a sort)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from gigi_memory.policy import now_ms
from gigi_memory.search import reads
from gigi_memory.service import service_of
from memory_helpers import enable, message, publish

TEXTS = [
    ("garlic garlic", "u1"),
    ("garlic soup tonight", "u1"),
    ("garlic bread and soup with pasta in the kitchen tonight for everyone here", "u2"),
    ("nothing about it here", "u2"),
]


async def _ranked(kernel, limit: int, author: str | None = None) -> list[str]:
    svc = service_of(kernel)
    f = reads.Filters("g1", ("c1",), False, now_ms(), author=author)
    async with reads.connection(svc.engine, svc.dialect) as conn:
        rows = await reads.fulltext_candidates(conn, svc.dialect, f, ["garlic"], limit)
    return [r.search_text for r in rows]


async def test_fulltext_hits_come_best_first_through_the_filters(kernel) -> None:
    await enable(kernel)
    await publish(kernel, *[message(t, author_id=a) for t, a in TEXTS])
    ranked = await _ranked(kernel, 10)
    assert ranked[0] == "garlic garlic" and set(ranked) == {t for t, _ in TEXTS[:3]}
    assert await _ranked(kernel, 1) == ["garlic garlic"]
    # The best two are u1's: the filter is applied as FTS5 hands matches over, in order.
    assert await _ranked(kernel, 1, author="u2") == [TEXTS[2][0]]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # FTS5 is SQLite's
async def test_sqlite_fts_orders_its_matches_itself_when_the_scope_is_most_of_them(
    kernel,
) -> None:
    """SQLite: for a scope holding most of the store's messages, and no author or period,
    the statement orders by ``memory_fts.rank``, which FTS5 consumes (no sort of its own in
    the plan: a search reads ~``k`` ledger rows, not one per match). With an author filter
    (or a small scope) it ranks the rows that pass with ``bm25()`` and sorts those: FTS5
    would rank every match store-wide for the few the filter keeps."""
    svc = service_of(kernel)
    await enable(kernel)
    await publish(kernel, *[message(t, author_id=a) for t, a in TEXTS])
    await enable(kernel, channel="c9")
    await publish(kernel, *[message(f"garlic elsewhere {i}", channel_id="c9") for i in range(3)])
    async with svc.engine.connect() as conn:
        assert (await conn.exec_driver_sql("SELECT count(*) FROM memory_messages")).scalar() == 7
    assert await _plan_sorts(kernel, svc) is False
    assert await _plan_sorts(kernel, svc, author="u2") is True
    assert await _plan_sorts(kernel, svc, channel="c9") is True  # 3 of 7 messages


async def _plan_sorts(kernel, svc, author: str | None = None, channel: str = "c1") -> bool:
    seen: list[tuple[str, dict]] = []

    def before(conn, cursor, statement, parameters, *args) -> None:
        if "MATCH" in statement and "LIMIT ?" in statement and "rank" in statement:
            seen.append((statement, parameters))

    f = reads.Filters("g1", (channel,), False, now_ms(), author=author)
    sa.event.listen(svc.engine.sync_engine, "before_cursor_execute", before)
    try:
        async with reads.connection(svc.engine, svc.dialect) as conn:
            await reads.fulltext_candidates(conn, svc.dialect, f, ["garlic"], 2)
    finally:
        sa.event.remove(svc.engine.sync_engine, "before_cursor_execute", before)
    (statement, parameters), *_ = seen
    async with svc.engine.connect() as conn:
        plan = await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
        return any("B-TREE FOR ORDER BY" in row[-1] for row in plan)
