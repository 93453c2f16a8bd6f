"""Ingest: the policy gate (what is never remembered), the batching writer, edits, deletes,
channel deletion and securing, and redaction before anything is stored."""

from __future__ import annotations

import asyncio

import gigi_memory
import pytest
from gigi_memory.service import service_of
from memory_helpers import (
    ago,
    call,
    count,
    dump_text,
    embed_all,
    enable,
    message,
    publish,
    rows,
    segments_of,
    settle,
)

from gigi_core.events import (
    ChannelDeleted,
    MessageDeleted,
    MessageEdited,
)


async def test_never_ingested(kernel) -> None:
    await enable(kernel)
    await publish(
        kernel,
        message("canary-dm", guild_id=None, channel_kind="dm"),
        message("canary-group", channel_kind="group_dm"),
        message(
            "canary-private", channel_id="t9", parent_channel_id="c1", channel_kind="private_thread"
        ),
        message("canary-bot", author_is_bot=True),
        message("canary-hook", author_is_webhook=True),
        message("canary-off", channel_id="c2"),
        message("canary-old", created_at=ago(minutes=5)),  # before the channel was enabled
        message("canary-other-guild", guild_id="g2"),  # memory is not enabled in g2
        message("remembered"),
    )
    stored = await dump_text(kernel)
    assert "canary" not in stored and "remembered" in stored
    assert await count(kernel, author="u1") == 1


async def test_bots_only_when_the_server_allows_them(kernel) -> None:
    await enable(kernel)
    await call(kernel, "policy", allow_bots=True)
    await publish(
        kernel, message("beep", author_is_bot=True), message("hook", author_is_webhook=True)
    )
    assert await count(kernel, text="beep") == 1 and await count(kernel, text="hook") == 1


async def test_a_paused_channel_is_not_ingested_and_threads_follow_their_channel(kernel) -> None:
    await enable(kernel)
    await publish(
        kernel,
        message("in a thread", channel_id="t1", parent_channel_id="c1", channel_kind="thread"),
    )
    assert await count(kernel, text="thread", channel="t1") == 1
    assert await count(kernel, text="thread") == 0  # this-channel is the channel itself
    assert await count(kernel, text="thread", scope="visible-guild") == 1  # with its threads
    await kernel.set_channel_state("g1", "c1", "paused", by="admin")
    await publish(kernel, message("while paused"))
    assert await count(kernel, text="paused") == 0


async def test_a_burst_is_written_in_few_transactions(kernel) -> None:
    await enable(kernel)
    svc = service_of(kernel)
    for i in range(1500):
        await kernel.publish(message(f"burst number {i}", mentioned_user_ids=("42",)))
    await settle(kernel)
    assert svc.writer.stats.written == 1500
    assert await count(kernel, text="burst") == 1500
    assert await count(kernel, mentioned="42") == 1500


async def test_edits_replace_the_search_text(kernel) -> None:
    await enable(kernel)
    first = message("the old canarytext here", mentioned_user_ids=("42",))
    await publish(kernel, first)
    await embed_all(kernel)
    (old_segment,) = await segments_of(kernel, first.message_id)
    await publish(
        kernel,
        MessageEdited(
            guild_id="g1",
            message_id=first.message_id,
            channel_id="c1",
            text="the new words",
            edited_at=ago(seconds=0),
        ),
    )
    assert await count(kernel, text="canarytext") == 0
    assert await count(kernel, text="new words") == 1
    assert await count(kernel, mentioned="42") == 1  # an edit keeps the message's mentions
    assert "canarytext" not in await dump_text(kernel)
    assert await segments_of(kernel, first.message_id) == []  # old vectors gone with the edit
    await embed_all(kernel)
    (new_segment,) = await segments_of(kernel, first.message_id)
    assert new_segment.id != old_segment.id
    (hit,) = (await call(kernel, "search", query="new"))["hits"]
    assert hit["snippet"] == "the new words" and hit["edited_at"] is not None


async def test_an_edit_in_a_channel_turned_off_drops_the_text(kernel) -> None:
    await enable(kernel)
    first = message("original canaryword")
    await publish(kernel, first)
    await call(kernel, "disable", channel="c1")
    await publish(
        kernel,
        MessageEdited(
            guild_id="g1",
            message_id=first.message_id,
            channel_id="c1",
            text="edited canarynew",
            edited_at=ago(seconds=0),
        ),
    )
    stored = await dump_text(kernel)
    assert "canaryword" not in stored and "canarynew" not in stored
    assert await count(kernel, author="u1") == 1


async def test_an_edit_in_a_paused_channel_drops_the_edited_away_text(kernel) -> None:
    """The kernel delivers it withheld (no text): the old words must not outlive the edit."""
    await enable(kernel)
    first = message("original canarypaused")
    await publish(kernel, first)
    await kernel.set_channel_state("g1", "c1", "paused", by="admin")
    await publish(
        kernel,
        MessageEdited(
            guild_id="g1",
            message_id=first.message_id,
            channel_id="c1",
            text="edited canaryunseen",
            edited_at=ago(seconds=0),
        ),
    )
    stored = await dump_text(kernel)
    assert "canarypaused" not in stored and "canaryunseen" not in stored
    assert await count(kernel, author="u1") == 1  # still counted as a message, by metadata


async def test_deletes_tombstone_and_purge_the_text(kernel) -> None:
    await enable(kernel)
    a, b, c = (
        message("canaryalpha <@7>", mentioned_user_ids=("7",)),
        message("canarybeta"),
        message("kept words"),
    )
    await publish(kernel, a, b, c)
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 3
    await publish(
        kernel, MessageDeleted(guild_id="g1", channel_id="c1", message_ids=(a.message_id,))
    )
    assert await segments_of(kernel, a.message_id) == []  # single delete: vectors gone at once
    await publish(
        kernel, MessageDeleted(guild_id="g1", channel_id="c1", message_ids=(b.message_id, "999999"))
    )
    assert [r.message_id for r in await segments_of(kernel)] == [c.message_id]  # bulk delete
    stored = await dump_text(kernel)
    assert "canaryalpha" not in stored and "canarybeta" not in stored
    assert await count(kernel, author="u1") == 1 and await count(kernel, mentioned="7") == 0
    tombstones = await rows(
        kernel,
        "SELECT message_id, search_text, sealed_text, deleted_ms FROM memory_messages WHERE deleted_ms IS NOT NULL",
    )
    assert {t.message_id for t in tombstones} == {a.message_id, b.message_id}
    assert all(t.search_text is None and t.sealed_text is None for t in tombstones)
    # A duplicate create (a re-import of a deleted message) does not bring it back.
    await publish(kernel, a)
    assert await count(kernel, text="canaryalpha") == 0


async def test_edits_and_deletes_of_messages_never_ingested_change_nothing(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("stored"))
    before = await rows(kernel, "SELECT * FROM memory_messages")
    await publish(
        kernel,
        MessageEdited(
            guild_id="g1",
            message_id="nope",
            channel_id="c1",
            text="ghost",
            edited_at=ago(seconds=0),
        ),
        MessageDeleted(guild_id="g1", channel_id="c1", message_ids=("nope", "nope2")),
        MessageEdited(
            guild_id="g1", message_id="x", channel_id="c2", text="ghost", edited_at=ago(seconds=0)
        ),
        MessageDeleted(guild_id="g1", channel_id="c2", message_ids=("x",)),
    )
    assert await rows(kernel, "SELECT * FROM memory_messages") == before
    assert "ghost" not in await dump_text(kernel)


async def test_channel_deleted_purges_the_channel_and_its_threads(kernel) -> None:
    await enable(kernel)
    await enable(kernel, channel="c2")
    await publish(
        kernel,
        message("canarygone"),
        message("canarythread", channel_id="t1", parent_channel_id="c1", channel_kind="thread"),
        message("still here", channel_id="c2"),
    )
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 3
    await publish(kernel, ChannelDeleted(guild_id="g1", channel_id="c1"))
    assert [r.channel_id for r in await segments_of(kernel)] == ["c2"]  # thread's vectors too
    stored = await dump_text(kernel)
    assert "canarygone" not in stored and "canarythread" not in stored and "still here" in stored
    assert await rows(kernel, "SELECT * FROM memory_channels WHERE channel_id = 'c1'") == []


async def test_securing_a_channel_drops_what_is_queued(kernel) -> None:
    await enable(kernel)
    svc = service_of(kernel)
    gate = asyncio.Event()
    real = svc.writer._run_ops

    async def held(run):  # hold the writer so the messages are still queued when secured
        await gate.wait()
        return await real(run)

    svc.writer._run_ops = held
    for i in range(5):
        await kernel.publish(message(f"canarysecure {i}"))
    await kernel.events.drain()
    await kernel.set_channel_state("g1", "c1", "secure", by="admin")
    await kernel.events.drain()
    gate.set()
    await settle(kernel)
    assert "canarysecure" not in await dump_text(kernel)
    # Resumed: messages are remembered again (once the hold after securing has passed).
    await kernel.set_channel_state("g1", "c1", "active", by="admin")
    svc.cache.secured.clear()
    await publish(kernel, message("back again"))
    assert await count(kernel, text="back again") == 1


async def test_secrets_emails_and_phones_are_masked_before_storage(kernel) -> None:
    await enable(kernel)
    await publish(
        kernel,
        message(
            "key sk-canaryABCDEFGHIJKLMNOP1234 mail canary.person@example.com "
            "call +1 415 555 0134 password=hunter2canary ok"
        ),
    )
    stored = await dump_text(kernel)
    for leaked in ("sk-canary", "canary.person", "example.com", "555 0134", "hunter2canary"):
        assert leaked not in stored
    (hit,) = (await call(kernel, "recent"))["messages"]
    assert hit["snippet"] == "key [token] mail [email] call [phone] password=[secret] ok"
    assert await count(kernel, text="example") == 0
    assert await count(kernel, text="ok") == 1


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
    from gigi_memory import ledger

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


async def test_the_event_handler_never_awaits(kernel) -> None:
    """observe_event is a plain function: the gate and the queue live in memory."""
    import inspect

    assert not inspect.iscoroutinefunction(gigi_memory.observe_event)
    await enable(kernel)
    svc = service_of(kernel)
    before = len(svc.writer.queue)
    gigi_memory.observe_event(message("direct"), kernel)
    assert len(svc.writer.queue) == before + 1
    await settle(kernel)


@pytest.mark.parametrize("text", ["🎉🎉🎉", "<@1> <@2>", "\u200b\u200b"])
async def test_messages_without_words_are_still_counted_by_author(kernel, text) -> None:
    await enable(kernel)
    await publish(kernel, message(text, mentioned_user_ids=("1",) if "<@" in text else ()))
    assert await count(kernel, author="u1") == 1


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


async def test_gigis_own_answers_are_never_remembered_even_with_bots_allowed(kernel) -> None:
    await enable(kernel)
    await call(kernel, "policy", allow_bots=True)
    await publish(
        kernel,
        message("quoting canarymods from another channel", author_is_bot=True, author_is_self=True),
        message("another bot canaryother", author_is_bot=True),
    )
    stored = await dump_text(kernel)
    assert "canarymods" not in stored and "canaryother" in stored


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

    from gigi_memory.policy import millis
    from gigi_memory.writer import Op

    await enable(kernel)
    svc = service_of(kernel)
    await settle(kernel)
    made = []
    real = svc.writer._contents
    monkeypatch.setattr(
        svc.writer, "_contents", lambda items: made.extend(i[0] for i in items) or real(items)
    )

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
    svc.writer._prepare_ahead([kept, stale])  # no await since they were queued
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
    from gigi_memory import writer

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
    from gigi_memory import ledger

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


async def test_the_gates_memo_gives_the_full_gates_verdict(kernel) -> None:
    """The memo of open channels never lets in what the full gate keeps out: a message from
    before the channel was enabled, past retention, a bot's, a secured channel's, a channel
    turned off, or after the cache was reloaded with other modes."""
    from gigi_memory.observe import live_gate
    from gigi_memory.policy import millis

    from gigi_core.events import ChannelSecured

    await enable(kernel)
    svc = service_of(kernel)

    def both(event):
        created = millis(event.created_at)
        full = svc.cache.gate(
            guild_id=event.guild_id,
            channel_id=event.channel_id,
            parent_id=event.parent_channel_id,
            kind=event.channel_kind,
            is_bot=event.author_is_bot or event.author_is_webhook,
            created_ms=created,
            live=True,
        )
        return live_gate(svc, event, created), full

    cases = [
        message("open"),
        message("thread", channel_id="t1", parent_channel_id="c1"),
        message("before enabled", created_at=ago(days=1)),
        message("past retention", created_at=ago(days=40)),
        message("a bot", author_is_bot=True),
        message("off", channel_id="c2"),
    ]
    for _ in range(2):  # the second round comes from the memo
        for event in cases:
            memo, full = both(event)
            assert (memo.ingest, memo.reason) == (full.ingest, full.reason), event.text
    assert [both(e)[0].ingest for e in cases] == [True, True, False, False, False, False]
    gigi_memory.observe_event(ChannelSecured(guild_id="g1", channel_id="c1"), kernel)
    assert both(message("secured"))[0].reason == "channel secured"
    svc.cache.secured.clear()
    assert both(message("open again"))[0].ingest
    await call(kernel, "disable", channel="c1")
    assert both(message("turned off"))[0].reason == "channel is off"
    await enable(kernel)
    assert both(message("on again"))[0].ingest
    svc.cache.channels = {}  # what a reload with the channel gone swaps in
    assert both(message("reloaded"))[0].reason == "channel is off"
