"""The batching writer: retries while the database is away, a full queue, a bad message,
redelivery, content made ahead, sealing in batches, every ledger column, the kept connection."""

from __future__ import annotations

import asyncio

import gigi_memory
import pytest
from gigi_memory.service import service_of
from memory_helpers import (
    call,
    count,
    dump_text,
    enable,
    message,
    publish,
    rows,
    settle,
)


async def test_the_writer_retries_while_the_database_is_away(kernel) -> None:
    from sqlalchemy.exc import OperationalError

    await enable(kernel)
    svc = service_of(kernel)
    real = svc.writer._run_ops
    failures = 2

    async def flaky(run):
        nonlocal failures
        if failures:
            failures -= 1
            raise OperationalError("INSERT", {}, Exception("connection refused"))
        return await real(run)

    svc.writer._run_ops = flaky
    await kernel.publish(message("eventually written"))
    await kernel.events.drain()
    await asyncio.sleep(0.1)
    status = await call(kernel, "status")
    assert status["writer"]["queued"] == 1 and status["writer"]["last_error"] == "OperationalError"
    assert await gigi_memory.flush(kernel, 30)
    assert svc.writer.stats.retries == 2
    assert await count(kernel, text="eventually") == 1


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # COPY: PostgreSQL's
async def test_a_connection_lost_during_copy_is_retried_not_dropped(kernel, monkeypatch) -> None:
    """PostgreSQL's COPY raises psycopg's own errors: a lost connection must be retried like
    any other statement's, never taken for a bad row and dropped."""
    assert service_of(kernel).dialect == "postgresql"
    import psycopg
    from gigi_memory.ingest import ledger

    await enable(kernel)
    real = ledger._copy
    failures = 2

    async def flaky(driver, table, names, rows):
        nonlocal failures
        if failures:
            failures -= 1
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        await real(driver, table, names, rows)

    monkeypatch.setattr(ledger, "_copy", flaky)
    await publish(kernel, message("copied eventually", mentioned_user_ids=("42",)))
    assert await gigi_memory.flush(kernel, 30)
    svc = service_of(kernel)
    assert svc.writer.stats.retries == 2 and svc.writer.stats.failed == 0
    assert await count(kernel, text="eventually") == 1
    assert await count(kernel, mentioned="42") == 1


async def test_a_full_queue_drops_messages_and_counts_them(kernel, monkeypatch) -> None:
    await enable(kernel)
    svc = service_of(kernel)
    svc.writer._limit = 100
    gate = asyncio.Event()
    real = svc.writer._run_ops

    async def held(run):
        await gate.wait()
        return await real(run)

    svc.writer._run_ops = held
    for i in range(300):
        await kernel.publish(message(f"flood {i}"))
    await kernel.events.drain()
    gate.set()
    await settle(kernel)
    assert svc.writer.stats.dropped > 0
    assert svc.writer.stats.written + svc.writer.stats.dropped == 300
    assert (await call(kernel, "status"))["writer"]["dropped"] == svc.writer.stats.dropped


async def test_one_bad_message_does_not_sink_its_batch(kernel) -> None:
    from sqlalchemy.exc import DataError

    await enable(kernel)
    svc = service_of(kernel)
    real = svc.writer._run_ops

    async def picky(run):
        if any(op.kind == "create" and op.materialize()["text"] == "poison" for op in run):
            raise DataError("INSERT", {}, Exception("value too long"))
        return await real(run)

    svc.writer._run_ops = picky
    gate = asyncio.Event()
    held = svc.writer._apply

    async def together(batch):  # all three in one batch
        await gate.wait()
        return await held(batch)

    svc.writer._apply = together
    for text in ("good one", "poison", "good two"):
        await kernel.publish(message(text))
    await kernel.events.drain()
    gate.set()
    await settle(kernel)
    assert await count(kernel, text="good") == 2
    assert svc.writer.stats.failed == 1 and svc.writer.stats.last_error == "DataError"


async def test_a_message_delivered_twice_is_stored_once_with_the_rest_of_its_batch(kernel) -> None:
    """A redelivered id among new ones: the batch falls back to the deduplicating insert."""
    await enable(kernel)
    first = message("postgres once", mentioned_user_ids=("42",))
    await publish(kernel, first)
    await publish(kernel, message("postgres new one"), first, message("postgres new two"))
    assert await count(kernel, text="postgres") == 3
    assert await count(kernel, mentioned="42") == 1
    assert service_of(kernel).writer.stats.failed == 0


async def test_content_made_ahead_is_used_only_under_the_rules_it_was_made_with(
    kernel, monkeypatch
) -> None:
    """The writer redacts and seals queued messages while the batch before them commits;
    if the server's redaction rules change before their turn, they are made again."""
    from dataclasses import replace

    from gigi_memory.ingest.operations import Op
    from gigi_memory.policy import millis

    await enable(kernel)
    svc = service_of(kernel)
    await settle(kernel)
    made = []
    real = svc.writer._contents

    async def spy(items):
        made.extend(i[0] for i in items)
        return await real(items)

    monkeypatch.setattr(svc.writer, "_contents", spy)

    def queued(text: str) -> Op:
        event = message(text)
        gate = svc.cache.gate(
            guild_id="g1",
            channel_id="c1",
            parent_id=None,
            kind="text",
            is_bot=False,
            created_ms=millis(event.created_at),
            live=True,
        )
        op = Op("create", "g1", None, event=event, gate=gate)
        svc.writer.enqueue(op)
        return op

    kept, stale = queued("ahead canaryplain"), queued("ahead PRJ-abcd canarymasked")
    await svc.writer._prepare_ahead([kept, stale])  # default rules: it never suspends
    assert made == [kept, stale]
    policy = svc.cache.guild("g1")
    rules = replace(policy.redaction, patterns=(r"PRJ-[a-z]{4}",))
    svc.cache.set_guild("g1", replace(policy, redaction=rules))
    kept.ahead = (rules, *kept.ahead[1:])  # as if made under the new rules
    await settle(kernel)
    assert made == [kept, stale, stale]  # only the stale one was made again
    stored = await dump_text(kernel)
    assert "canaryplain" in stored and "prj" not in stored.lower().replace("[redacted]", "")


async def test_a_burst_is_sealed_in_batches_that_the_kernels_sealer_opens(kernel) -> None:
    """The writer seals a batch with one nonce range: every row opens with the kernel's own
    sealer under its message's associated data, no nonce repeats, equal texts hash equal."""
    from gigi_core.store.sealing import Sealed

    await enable(kernel)
    texts = [f"burst message {i % 40} mail a{i}@example.com" for i in range(300)]
    await publish(kernel, *(message(t) for t in texts))
    stored = await rows(
        kernel,
        "SELECT guild_id, message_id, search_text, sealed_key_id, sealed_nonce, sealed_text, "
        "content_hash FROM memory_messages ORDER BY id",
    )
    assert len(stored) == 300
    sealer = kernel.state_sealer
    opened = [
        sealer.open(
            Sealed(r.sealed_key_id, bytes(r.sealed_nonce), bytes(r.sealed_text), ""),
            f"gigi-memory:{r.guild_id}:{r.message_id}",
        )
        for r in stored
    ]
    assert opened == [t.split(" mail ")[0] + " mail [email]" for t in texts]
    assert len({bytes(r.sealed_nonce) for r in stored}) == 300
    by_text: dict[str, set[str]] = {}
    for r, text in zip(stored, opened, strict=True):
        by_text.setdefault(text, set()).add(r.content_hash)
    assert all(len(h) == 1 for h in by_text.values()) and len(by_text) == 40
    hashes = {next(iter(h)) for h in by_text.values()}
    assert len(hashes) == 40 and all(len(h) == 64 for h in hashes)
    import hashlib

    assert not hashes & {
        hashlib.blake2b(f"g1\0{t}".encode(), digest_size=32).hexdigest() for t in opened
    }


async def test_the_content_hash_is_keyed_blake2b_of_guild_and_text_on_every_call(kernel) -> None:
    """The guild's keyed prefix is hashed once and copied per text: the copy must leave it
    as it was (the same text hashes the same the second time) and keep guilds apart."""
    import hashlib

    svc = service_of(kernel)
    first = svc.text_hash("g1", "release on friday")
    assert svc.text_hash("g1", "release on friday") == first
    assert svc.text_hash("g1", "release on monday") != first
    assert svc.text_hash("g2", "release on friday") != first
    for guild, text in (("g1", "release on friday"), ("g2", ""), ("g1", "ünïcode ✓")):
        want = hashlib.blake2b(
            f"{guild}\0{text}".encode(), key=svc._hash_key, digest_size=32
        ).hexdigest()
        assert svc.text_hash(guild, text) == want


@pytest.mark.parametrize("redelivered", [False, True], ids=["copy", "dedupe-fallback"])
async def test_every_ledger_column_is_stored_from_its_message(kernel, redelivered) -> None:
    """The writer builds each row as a tuple in ``ledger.COLUMNS`` order: every column holds
    its own field, on the bulk path and on the deduplicating one a redelivery takes."""
    from gigi_memory.policy import DAY_MS, millis

    await enable(kernel, days=30)
    svc = service_of(kernel)
    seen = message("seen before")
    if redelivered:
        await publish(kernel, seen)
    event = message(
        "Thread reply about Postgres",
        channel_id="t7",
        parent_channel_id="c1",
        channel_kind="thread",
        author_id="u9",
        reply_to_id="555",
        mentioned_user_ids=("42", "43", "42"),
    )
    await publish(kernel, *([seen] if redelivered else []), event)
    [row] = await rows(
        kernel,
        "SELECT * FROM memory_messages WHERE message_id = :m",
        m=event.message_id,
    )
    created = millis(event.created_at)
    assert (row.guild_id, row.message_id, row.channel_id, row.parent_channel_id) == (
        "g1",
        event.message_id,
        "t7",
        "c1",
    )
    assert (row.author_id, row.surface, row.reply_to_id) == ("u9", "discord", "555")
    assert (row.created_ms, row.edited_ms, row.deleted_ms) == (created, None, None)
    assert row.retention_until_ms == created + 30 * DAY_MS
    assert row.search_text == "thread reply about postgres"
    assert row.content_hash == svc.text_hash("g1", "Thread reply about Postgres")
    assert svc.unseal(row) == "Thread reply about Postgres"
    mentioned = await rows(
        kernel,
        "SELECT user_id, channel_id, author_id, created_ms FROM memory_mentions "
        "WHERE message_id = :m ORDER BY user_id",
        m=event.message_id,
    )
    assert [tuple(r) for r in mentioned] == [
        ("42", "t7", "u9", created),
        ("43", "t7", "u9", created),
    ]
    assert await count(kernel, text="seen") == (1 if redelivered else 0)
    assert svc.writer.stats.failed == 0


async def _queue_batches(kernel, monkeypatch, n: int) -> list[str]:
    """``n`` messages queued at once (no await between them) with 10 to a batch."""
    from gigi_memory.ingest import writer

    monkeypatch.setattr(writer, "BATCH", 10)
    await enable(kernel)
    await call(kernel, "policy", embeddings="off")  # nothing but the writer uses the pool
    events = [message(f"held batch {i}") for i in range(n)]
    for event in events:
        gigi_memory.observe_event(event, kernel)
    return [e.message_id for e in events]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_the_writer_keeps_one_connection_while_work_is_queued(kernel, monkeypatch) -> None:
    """Batch after batch on one checked-out connection: no pool checkout (and pre-ping round
    trip) per batch; the connection goes back to the pool once the queue is empty."""
    from sqlalchemy import event

    checkouts = []
    engine = service_of(kernel).engine.sync_engine
    listener = lambda *_: checkouts.append(1)  # noqa: E731
    await _queue_batches(kernel, monkeypatch, 35)  # 4 batches
    event.listen(engine, "checkout", listener)
    try:
        assert await gigi_memory.flush(kernel, 30)
    finally:
        event.remove(engine, "checkout", listener)
    assert len(checkouts) == 1
    assert await count(kernel, text="held") == 35
    assert service_of(kernel).writer._conn is None or await _idle_release(kernel)


async def _idle_release(kernel) -> bool:
    for _ in range(100):  # the writer task releases it on its next turn
        if service_of(kernel).writer._conn is None:
            return True
        await asyncio.sleep(0.01)
    return False


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_the_server_dropping_the_writers_connection_loses_nothing(
    kernel, monkeypatch
) -> None:
    """The server ends the held connection between two batches (a restart, an admin's
    ``pg_terminate_backend``): the writer retries on a fresh one; nothing lost, nothing twice."""
    import sqlalchemy as sa
    from gigi_memory.ingest import ledger

    svc = service_of(kernel)
    real = ledger._copy
    pids: list[int] = []

    async def spy(driver, table, names, rows):
        if table == "memory_messages":
            pid = driver.info.backend_pid
            if len(pids) == 1:  # the second batch, on the connection held since the first
                async with svc.engine.connect() as other:
                    await other.execute(
                        sa.text("SELECT pg_terminate_backend(:p, 5000)"), {"p": pid}
                    )
            pids.append(pid)
        await real(driver, table, names, rows)

    monkeypatch.setattr(ledger, "_copy", spy)
    ids = await _queue_batches(kernel, monkeypatch, 35)
    assert await gigi_memory.flush(kernel, 60)
    assert svc.writer.stats.retries >= 1 and svc.writer.stats.failed == 0
    assert pids[0] == pids[1] != pids[-1]  # held, then replaced
    stored = await rows(kernel, "SELECT message_id FROM memory_messages WHERE guild_id = 'g1'")
    assert sorted(r[0] for r in stored) == sorted(ids)
    assert await count(kernel, text="held") == 35


async def test_the_lag_counts_the_batch_being_written(kernel) -> None:
    """A batch stuck in its statement (a server that does not answer) is lag too, though
    nothing is left in the queue behind it."""
    await enable(kernel)
    svc = service_of(kernel)
    gate = asyncio.Event()
    real = svc.writer._run_ops

    async def stuck(run):
        await gate.wait()
        return await real(run)

    svc.writer._run_ops = stuck
    await kernel.publish(message("stuck in flight"))
    await kernel.events.drain()
    await asyncio.sleep(0.3)
    assert not svc.writer.queue and svc.writer._inflight
    assert svc.writer.lag_seconds >= 0.3
    assert (await call(kernel, "status"))["writer"]["lag_seconds"] >= 0.3
    gate.set()
    assert await gigi_memory.flush(kernel, 30)
    assert svc.writer.lag_seconds == 0.0
