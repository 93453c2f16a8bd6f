"""Usage rows through the batching writer: when they land, and failures that are never lost."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading

import pytest
from sqlalchemy import event, text

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.llm import caller
from gigi_core.llm.cache import MISSING
from gigi_core.llm.caller import UsageNotRecorded
from gigi_core.llm.usage import UsageRecord, UsageWrite, event_row, usage_write
from tests.llm.inprocess import HI, KeyedEcho, Statements, configure, echo_kernel


def _row(n: int) -> dict:
    return event_row(
        UsageRecord(
            request_id=f"r{n}",
            provider="p",
            model="m",
            purpose="chat",
            billing_owner_type="guild",
            billing_owner_id="g1",
            status="ok",
            guild_id="g1",
        )
    )


def _commits(kernel) -> list[int]:
    """A counter of commits on the writer's connection (SQLite: its own engine)."""
    engine = kernel.db.writer._engine or kernel.db.engine.sync_engine
    count = [0]
    event.listen(engine, "commit", lambda *_: count.__setitem__(0, count[0] + 1))
    return count


async def _stored(kernel) -> int:
    return len(await kernel.llm.usage_log.events("g1", limit=10_000))


def _failing(rows, outcome=None):
    def write(conn):
        raise RuntimeError("disk I/O error")

    return write


async def test_attached_writes_ride_with_the_tasks_next_write(database_url, tmp_path) -> None:
    async with echo_kernel(tmp_path, database_url, KeyedEcho()) as kernel:
        writer = kernel.db.writer
        await writer.write(usage_write([_row(0)]))  # the writer's connection exists now
        commits = _commits(kernel)
        first = writer.attach(usage_write([_row(1)]), within=30)
        second = writer.attach(usage_write([_row(2)]), within=30)
        await asyncio.sleep(0.01)
        assert not first.done() and commits[0] == 0  # waiting for a partner
        await writer.write(lambda conn: conn.execute(text("SELECT 1")))
        assert first.done() and second.done() and commits[0] == 1  # one transaction
        assert await _stored(kernel) == 3

        # Usage writes that ride together are merged: one insert for both rows.
        with Statements(kernel) as sql:
            for n in (10, 11):
                writer.attach(usage_write([_row(n)]), within=30, combine=UsageWrite.combine)
            await writer.write(lambda conn: None)
        assert len(sql.touching("llm_usage_events", "INSERT")) == 1
        assert await _stored(kernel) == 5

        # Another task's write does not take them; they go alone after `within`.
        alone = writer.attach(usage_write([_row(3)]), within=0.05)
        await asyncio.create_task(writer.write(lambda conn: None))
        assert not alone.done()
        await asyncio.wait_for(alone, 5)
        # A reader drains what is still waiting.
        writer.attach(usage_write([_row(4)]), within=30)
        assert await _stored(kernel) == 7


async def test_a_failed_attached_write_fails_the_tasks_next_write(
    database_url, tmp_path, caplog
) -> None:
    async with echo_kernel(tmp_path, database_url, KeyedEcho()) as kernel:
        writer = kernel.db.writer
        lost = writer.attach(_failing([]), within=0.01)
        with pytest.raises(RuntimeError):
            await lost
        assert "a queued database write failed" in caplog.text
        wrote = []
        with pytest.raises(RuntimeError, match="queued earlier from this task failed"):
            await writer.write(lambda conn: wrote.append(1))
        assert wrote == []  # refused before writing anything
        await writer.write(lambda conn: wrote.append(1))  # reported once, then cleared
        assert wrote == [1]


async def test_a_plain_call_fails_when_its_usage_row_cannot_be_written(
    database_url, tmp_path, monkeypatch
) -> None:
    async with echo_kernel(tmp_path, database_url, KeyedEcho()) as kernel:
        await configure(kernel)
        monkeypatch.setattr(caller, "usage_write", _failing)
        with pytest.raises(UsageNotRecorded, match="could not be recorded"):
            await kernel.llm.chat(HI, guild_id="g1", actor="u1")
        monkeypatch.undo()
        await kernel.llm.chat(HI, guild_id="g1", actor="u1")  # and the cache is consistent
        assert await _stored(kernel) == 1


def _turn(kernel, durability: str) -> AgentRuntime:
    """The runtime passing its durability to kernel.llm, as every production turn does."""
    kernel.llm.chat = functools.partial(type(kernel.llm).chat, kernel.llm, durability=durability)
    return AgentRuntime(kernel, durability=durability)


REQUEST = Request(actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="mention", text="go")


def _held_on_the_writer_thread(monkeypatch) -> threading.Event:
    """Usage writes wait for the returned event on the writer's thread (both backends write
    there), so a test can see what landed before the reply."""
    release = threading.Event()
    real = caller.usage_write

    def held(rows, outcome=None):
        write = real(rows, outcome)

        def wait_then_write(conn):
            if threading.current_thread() is not threading.main_thread():
                release.wait(10)
            return write(conn)

        return wait_then_write

    monkeypatch.setattr(caller, "usage_write", held)
    return release


@pytest.mark.parametrize("durability", ["step", "turn", "deferred"])
async def test_usage_rows_land_by_the_durability(
    database_url, tmp_path, durability, monkeypatch
) -> None:
    """step and turn: the row is stored before the reply; deferred: the reply does not wait
    for it (held on the writer's thread, it is still out), and it is never lost."""
    async with echo_kernel(tmp_path, database_url, KeyedEcho()) as kernel:
        await configure(kernel)
        runtime = _turn(kernel, durability)
        release = _held_on_the_writer_thread(monkeypatch)
        if durability != "deferred":
            release.set()
        reply = await runtime.handle(REQUEST)
        assert reply.status == "done" and reply.text == "answer from m-1"
        async with kernel.db.engine.connect() as conn:  # no drain: what landed before the reply
            landed = await conn.scalar(text("SELECT COUNT(*) FROM llm_usage_events"))
        assert landed == (0 if durability == "deferred" else 1)
        release.set()
        assert await _stored(kernel) == 1  # deferred: behind the reply, never lost


@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_a_writer_failure_with_usage_rows_queued_fails_the_turn(
    database_url, tmp_path, monkeypatch, durability, caplog
) -> None:
    caplog.set_level(logging.ERROR)
    provider = KeyedEcho()
    async with echo_kernel(tmp_path, database_url, provider) as kernel:
        await configure(kernel)
        runtime = _turn(kernel, durability)
        monkeypatch.setattr(caller, "usage_write", _failing)
        reply = await runtime.handle(REQUEST)
        assert provider.log  # the model answered, but its usage row could not be stored
        assert reply.status == "failed" and reply.text != "answer from m-1"
        run = await runtime.runs.get(reply.run_id)
        assert run.status == "failed"
        assert await _stored(kernel) == 0
        assert "usage row not recorded" in caplog.text or "queued database write" in caplog.text


async def test_a_deferred_usage_failure_is_logged(
    database_url, tmp_path, monkeypatch, caplog
) -> None:
    async with echo_kernel(tmp_path, database_url, KeyedEcho()) as kernel:
        await configure(kernel)
        runtime = _turn(kernel, "deferred")
        monkeypatch.setattr(caller, "usage_write", _failing)
        reply = await runtime.handle(REQUEST)
        assert reply.status == "done"  # the reply had gone: the failure goes to the log
        assert kernel.llm.unrecorded == 0
        kernel.llm.cache.put(("probe",), "kept", kernel.llm.cache.generation)
        await kernel.db.writer.drain()
        assert "a queued database write failed" in caplog.text
        assert "usage row not recorded (deferred, after the reply): 1" in caplog.text
        assert kernel.llm.unrecorded == 1  # counted where an operator can read it
        # the credential outcome noted in the cache may not have landed: the cache is cleared
        assert kernel.llm.cache.get(("probe",)) is MISSING
