"""PostgreSQL: a long run of creates is copied as two halves on two connections at once;
every message lands once, also when one half fails after the other committed."""

from __future__ import annotations

import gigi_memory
import pytest
from gigi_memory.service import service_of
from memory_helpers import call, enable, message, rows

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


async def queue_run(kernel, monkeypatch, n: int) -> None:
    """``n`` messages (every third mentions 42) queued at once: one batch, copied in halves."""
    from gigi_memory.ingest import writer

    monkeypatch.setattr(writer, "BATCH", n)
    monkeypatch.setattr(writer, "COPY_HALF", 5)
    await enable(kernel)
    await call(kernel, "policy", embeddings="off")
    for i in range(n):
        mentions = ("42",) if i % 3 == 0 else ()
        gigi_memory.observe_event(message(f"half note {i}", mentioned_user_ids=mentions), kernel)


async def stored(kernel) -> tuple[int, int, int]:
    """(messages, distinct messages, mentions of 42)."""
    [(total, distinct)] = await rows(
        kernel, "SELECT COUNT(*), COUNT(DISTINCT message_id) FROM memory_messages"
    )
    [(mentions,)] = await rows(kernel, "SELECT COUNT(*) FROM memory_mentions WHERE user_id = '42'")
    return total, distinct, mentions


def spy_copies(monkeypatch, *, fail_table_once: str | None = None) -> list[tuple[int, str, int]]:
    """Record (backend pid, table, rows) of every ``COPY``; optionally fail one the first
    time it runs on the connection that was not the first to copy (the second half)."""
    import psycopg
    from gigi_memory.ingest import ledger

    real = ledger._copy
    seen: list[tuple[int, str, int]] = []
    failed = []

    async def copy(driver, table, names, rows_):
        pid = driver.info.backend_pid
        first_pid = seen[0][0] if seen else pid
        if fail_table_once == table and pid != first_pid and not failed:
            failed.append(pid)
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        seen.append((pid, table, len(rows_)))
        await real(driver, table, names, rows_)

    monkeypatch.setattr(ledger, "_copy", copy)
    return seen


async def test_a_long_run_is_copied_in_two_halves_on_two_connections(kernel, monkeypatch):
    copies = spy_copies(monkeypatch)
    await queue_run(kernel, monkeypatch, 30)
    assert await gigi_memory.flush(kernel, 30)
    assert await stored(kernel) == (30, 30, 10)
    messages = [(pid, n) for pid, table, n in copies if table == "memory_messages"]
    assert sorted(n for _, n in messages) == [15, 15]
    assert len({pid for pid, _ in messages}) == 2  # two backends at once


async def test_a_half_that_fails_is_retried_and_nothing_lands_twice(kernel, monkeypatch):
    copies = spy_copies(monkeypatch, fail_table_once="memory_messages")
    await queue_run(kernel, monkeypatch, 30)
    assert await gigi_memory.flush(kernel, 30)
    svc = service_of(kernel)
    assert svc.writer.stats.retries == 1 and svc.writer.stats.failed == 0
    assert await stored(kernel) == (30, 30, 10)
    # The retry found the committed half already stored: COPY refused it, INSERT deduplicated.
    assert svc.writer.stats.written == 30
    assert sum(n for _, table, n in copies if table == "memory_messages") >= 30
