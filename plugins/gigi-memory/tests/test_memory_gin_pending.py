"""PostgreSQL: the words of new rows wait in the GIN index's pending list, which every
full-text query scans in full; the writer merges it when it is idle (after its own batches
and after the embedding job's), spaced as SQLite's compaction is, and a role that may not
clean the index is told once and left to autovacuum."""

from __future__ import annotations

import asyncio
import time

import pytest
import sqlalchemy as sa
from gigi_memory.service import service_of
from gigi_memory.store import GIN_INDEX, Store
from memory_helpers import call, count, embed_all, enable, message, publish, rows

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


async def pending_tuples(kernel) -> int:
    [(n,)] = await rows(kernel, f"SELECT pending_tuples FROM pgstatginindex('{GIN_INDEX}')")
    return n


async def held_off(kernel) -> Store:
    """The store, with its next merge an hour away: what is written stays pending."""
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pgstattuple"))
    store = service_of(kernel).store
    store.last_compact_at, store.last_compact_seconds = time.monotonic(), 180.0
    return store


async def merged(kernel, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if await pending_tuples(kernel) == 0:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_the_writer_merges_the_pending_list_when_it_is_next_idle(kernel):
    await enable(kernel)
    await call(kernel, "policy", embeddings="off")
    store = await held_off(kernel)
    await publish(kernel, *(message(f"pending postgres note {i}") for i in range(40)))
    assert await pending_tuples(kernel) == 40  # written, not merged: not due for an hour
    assert store.fts_dirty and store.compact_due() > 3000

    store.last_compact_at = float("-inf")  # due now: the idle writer merges on its next wake
    service_of(kernel).writer.wake()
    assert await merged(kernel)
    assert not store.fts_dirty
    assert await count(kernel, text="postgres") == 40  # merged, still found


async def test_the_embedding_jobs_writes_are_merged_too(kernel):
    await enable(kernel)
    store = await held_off(kernel)
    await publish(kernel, *(message(f"embedded release note {i}") for i in range(12)))
    store.last_compact_at = float("-inf")
    service_of(kernel).writer.wake()
    assert await merged(kernel)  # the writer's own rows merged, before any vector

    store.last_compact_at, store.fts_dirty = time.monotonic(), False
    await embed_all(kernel)  # marking rows embedded is no HOT update: their words go in again
    assert store.fts_dirty
    assert await pending_tuples(kernel) > 0
    store.last_compact_at = float("-inf")
    service_of(kernel).writer.wake()
    assert await merged(kernel)


async def test_a_role_that_may_not_clean_the_index_is_left_to_autovacuum(kernel, caplog):
    await enable(kernel)
    await publish(kernel, message("owned elsewhere"))
    url = kernel.db.engine.url
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.text("DROP ROLE IF EXISTS gigi_not_owner"))
        await conn.execute(sa.text("CREATE ROLE gigi_not_owner LOGIN PASSWORD 'pw'"))
        await conn.execute(sa.text("GRANT SELECT ON memory_messages TO gigi_not_owner"))
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url.set(username="gigi_not_owner", password="pw"))
    try:
        store = Store(engine=engine, dialect="postgresql")
        store.note_written()
        await store.compact()  # refused by PostgreSQL: noted, not raised
        assert not store.gin_clean and not store.fts_dirty
        store.note_written()
        assert not store.fts_dirty and store.compact_due() is None  # never asked again
        assert "not its owner" in caplog.text
    finally:
        await engine.dispose()
        async with kernel.db.engine.begin() as conn:
            await conn.execute(sa.text("REVOKE ALL ON memory_messages FROM gigi_not_owner"))
            await conn.execute(sa.text("DROP ROLE gigi_not_owner"))
