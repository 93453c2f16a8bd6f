"""Callers that miss one cached fact together share one read; a failed or cancelled first
read leaves each waiter to read for itself (pure logic: no database needed)."""

from __future__ import annotations

import asyncio

import pytest

from gigi_core.policy.shared_reads import SharedReads


class Reader:
    """A read that counts its calls and waits until the test lets it finish."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.fail: Exception | None = None

    async def __call__(self) -> str:
        self.calls += 1
        call = self.calls
        await self.release.wait()
        if self.fail is not None and call == 1:
            raise self.fail
        return f"value {call}"


async def test_callers_missing_together_share_one_read() -> None:
    reads, reader = SharedReads(), Reader()
    callers = [asyncio.create_task(reads.read(("k", 0), reader)) for _ in range(10)]
    await asyncio.sleep(0)
    assert reader.calls == 1 and len(reads) == 1
    reader.release.set()
    assert await asyncio.gather(*callers) == ["value 1"] * 10
    assert len(reads) == 0  # nothing kept once it landed: the caches keep values, not this
    assert await reads.read(("k", 0), reader) == "value 2"  # a later miss reads again


async def test_another_key_or_generation_is_another_read() -> None:
    reads, reader = SharedReads(), Reader()
    reader.release.set()
    first = asyncio.create_task(reads.read(("k", 0), reader))
    other_key = asyncio.create_task(reads.read(("j", 0), reader))
    after_a_change = asyncio.create_task(reads.read(("k", 1), reader))
    assert sorted(await asyncio.gather(first, other_key, after_a_change)) == [
        "value 1",
        "value 2",
        "value 3",
    ]


async def test_a_failed_first_read_leaves_each_waiter_to_read_itself() -> None:
    reads, reader = SharedReads(), Reader()
    reader.fail = ConnectionError("database went away")
    first = asyncio.create_task(reads.read("k", reader))
    await asyncio.sleep(0)
    waiters = [asyncio.create_task(reads.read("k", reader)) for _ in range(2)]
    await asyncio.sleep(0)
    reader.release.set()
    with pytest.raises(ConnectionError):
        await first
    assert sorted(await asyncio.gather(*waiters)) == ["value 2", "value 3"]


async def test_a_cancelled_first_reader_does_not_fail_its_waiters() -> None:
    reads, reader = SharedReads(), Reader()
    first = asyncio.create_task(reads.read("k", reader))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(reads.read("k", reader))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    reader.release.set()
    assert await waiter == "value 2"
    assert first.cancelled()


async def test_a_cancelled_waiter_does_not_cancel_the_read() -> None:
    reads, reader = SharedReads(), Reader()
    first = asyncio.create_task(reads.read("k", reader))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(reads.read("k", reader))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.sleep(0)
    reader.release.set()
    assert await first == "value 1" and reader.calls == 1
    assert waiter.cancelled()
