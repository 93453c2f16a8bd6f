"""Ingest: the policy gate (what is never remembered), edits, deletes, channel deletion and
securing, and redaction before anything is stored."""

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
    assert await count(kernel, mentioned="42") == 1  # mentions not given: the old ones stand
    assert "canarytext" not in await dump_text(kernel)
    assert await segments_of(kernel, first.message_id) == []  # old vectors gone with the edit
    await embed_all(kernel)
    (new_segment,) = await segments_of(kernel, first.message_id)
    assert new_segment.id != old_segment.id
    (hit,) = (await call(kernel, "search", query="new"))["hits"]
    assert hit["snippet"] == "the new words" and hit["edited_at"] is not None


async def test_an_edit_that_names_its_mentions_replaces_them(kernel) -> None:
    """A mention edited away is no longer counted; one the edit adds is. Two edits of a
    message in one batch: the last wins."""
    await enable(kernel)
    first = message("ping the team", author_id="u7", mentioned_user_ids=("42", "43"))
    other = message("someone else", mentioned_user_ids=("42",))
    await publish(kernel, first, other)

    def edit(text: str, mentions: tuple[str, ...]) -> MessageEdited:
        return MessageEdited(
            guild_id="g1",
            message_id=first.message_id,
            channel_id="c1",
            text=text,
            edited_at=ago(seconds=0),
            mentioned_user_ids=mentions,
        )

    await publish(kernel, edit("ping 43 and 44", ("43", "44")), edit("ping 44 only", ("44",)))
    assert await count(kernel, mentioned="42") == 1  # only the other message now
    assert await count(kernel, mentioned="43") == 0
    assert await count(kernel, mentioned="44") == 1
    assert await count(kernel, mentioned="44", author=first.author_id) == 1  # author kept
    await publish(kernel, edit("nobody at all", ()))
    assert await count(kernel, mentioned="44") == 0
    # An edit of a message never stored adds no mention rows.
    stray = MessageEdited(
        guild_id="g1",
        message_id="999999",
        channel_id="c1",
        text="hi",
        edited_at=ago(seconds=0),
        mentioned_user_ids=("45",),
    )
    await publish(kernel, stray)
    assert await count(kernel, mentioned="45") == 0


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


async def test_the_gates_memo_gives_the_full_gates_verdict(kernel) -> None:
    """The memo of open channels never lets in what the full gate keeps out: a message from
    before the channel was enabled, past retention, a bot's, a secured channel's, a channel
    turned off, or after the cache was reloaded with other modes."""
    from gigi_memory.ingest.observe import live_gate
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
