"""Budget leases (issue 30): a process takes a share of a window in one write and holds its
calls from it; the share goes back when idle or at close, a crashed process's share is
reclaimed after it expires, and no order of settles and give-backs lets spend pass the
limit. Both backends; two kernels on one database stand for two processes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from gigi_core import Actor
from gigi_core.llm import BudgetExhausted
from gigi_core.llm.budget_leases import LEASE_SECONDS, settle, share
from gigi_core.store.budget_tables import LlmBudgetLease
from gigi_core.store.budget_tables import LlmBudgetWindow as W
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import (
    GUILD,
    MOST,
    configure,
    counters,
    request,
    two_processes,
    usage_of,
)

MEMBER = Actor(id="u1")
NOON = datetime(2026, 3, 4, 12, 0, tzinfo=UTC).timestamp()  # far from a window's reset


async def chat(kernel):
    return await kernel.llm.chat(request(), guild_id=GUILD, actor=MEMBER, channel_id="c1")


async def leases(kernel) -> list[tuple[str, int]]:
    await kernel.db.writer.drain()
    async with kernel.db.session() as s:
        rows = await s.scalars(select(LlmBudgetLease).order_by(LlmBudgetLease.holder))
        return [(r.holder, int(r.amount)) for r in rows]


async def raw(kernel) -> tuple[int, int]:
    """(spent, reserved) as stored, leases included (``counters`` gives them back first)."""
    await kernel.db.writer.drain()
    async with kernel.db.session() as s:
        row = (await s.execute(select(func.sum(W.spent), func.sum(W.reserved)))).one()
    return int(row[0] or 0), int(row[1] or 0)


async def test_calls_are_held_from_one_share_taken_in_one_write(database_url, tmp_path) -> None:
    async with (
        open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as kernel,
        FakeOpenAI() as fake,
    ):
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=1000 * MOST)
        assert share(1000 * MOST, MOST) == 16 * MOST  # LEASE_CALLS calls' worth
        fake.reply_text("ok", usage=usage_of(MOST // 2), times=5)
        writes = 0
        original = kernel.llm.budgets._write

        async def counted(fn):
            nonlocal writes
            writes += 1
            return await original(fn)

        kernel.llm.budgets._write = counted
        for _ in range(5):
            await chat(kernel)
        assert writes == 1  # the first call took the share; four more were held from it
        [(holder, amount)] = await leases(kernel)
        # each settle moved what the call used off the lease into the spend
        assert amount == 16 * MOST - 5 * (MOST // 2)
        assert await raw(kernel) == (5 * (MOST // 2), amount)
        # idle: given back whole, the window's room is whole again
        assert await kernel.llm.budgets.give_back(idle_for=0) == 1
        assert await leases(kernel) == []
        assert await raw(kernel) == (5 * (MOST // 2), 0)


async def test_a_small_budget_is_shared_a_quarter_at_a_time(database_url, tmp_path) -> None:
    async with two_processes(database_url, tmp_path) as (one, two, fake):
        await configure(one, fake.base_url)
        await one.llm.set_budget(GUILD, "guild", None, limit=8 * MOST)
        fake.reply_text("ok", usage=usage_of(MOST), times=8)
        await chat(one)  # takes 2 calls' worth (a quarter of 8), not the whole budget
        assert [a for _, a in await leases(one)] == [MOST]
        results = await asyncio.gather(
            *(chat(k) for _ in range(6) for k in (one, two)), return_exceptions=True
        )
        ok = sum(not isinstance(r, BaseException) for r in results)
        assert all(isinstance(r, BudgetExhausted) for r in results if isinstance(r, BaseException))
        spent, reserved = await raw(one)
        assert ok <= 7 and spent == (1 + ok) * MOST and spent + reserved <= 8 * MOST
        # a share one process took and had no call for goes back; then the room is usable
        for k in (one, two):
            await k.llm.budgets.give_back()
        while ok < 7:
            await chat(two)
            ok += 1
        with pytest.raises(BudgetExhausted):
            await chat(one)
        assert await raw(one) == (8 * MOST, 0)  # every share spent, none left over


async def test_a_crashed_process_lease_is_reclaimed_once_expired(database_url, tmp_path) -> None:
    async with two_processes(database_url, tmp_path) as (one, two, fake):
        for k in (one, two):
            k.llm.budgets.clock = lambda: NOON
        await configure(one, fake.base_url)
        await one.llm.set_budget(GUILD, "guild", None, limit=16 * MOST)
        fake.reply_text("ok", usage=usage_of(MOST), times=16)
        await chat(one)  # takes a share of 4 calls, uses one
        await one.db.writer.drain()
        one.llm.budgets.leases.clear()  # "crashed": its share is never given back
        assert await raw(two) == (MOST, 3 * MOST)
        for _ in range(12):
            await chat(two)
        with pytest.raises(BudgetExhausted):  # the dead share holds the rest until it expires
            await chat(two)
        two.llm.budgets.clock = lambda: NOON + LEASE_SECONDS + 1
        for _ in range(3):
            await chat(two)
        with pytest.raises(BudgetExhausted):
            await chat(two)
        assert await counters(two) == (16 * MOST, 0)
        assert len(fake.requests_to("chat")) == 16


async def test_a_settle_after_its_lease_was_reclaimed_takes_no_room_back_twice(
    database_url, tmp_path
) -> None:
    async with two_processes(database_url, tmp_path) as (one, two, fake):
        await configure(one, fake.base_url)
        await one.llm.set_budget(GUILD, "guild", None, limit=4 * MOST)
        budgets = one.llm.budgets
        budgets.clock = lambda: NOON
        [hold] = await budgets.reserve(GUILD, {"actor_id": "u1"}, "openai-compatible", "m", MOST)
        spent, reserved = await raw(one)
        assert (spent, reserved) == (0, MOST)  # a quarter of 4 calls: one call's share
        # the holder stalls past the lease's life; the other process reclaims its share
        two.llm.budgets.clock = lambda: NOON + LEASE_SECONDS + 1
        fake.reply_text("ok", usage=usage_of(MOST), times=4)
        for _ in range(4):
            await chat(two)
        assert await raw(two) == (4 * MOST, 0)
        # the stalled call settles late: its spend counts, the room is not given back again
        rows = budgets.settle_rows([hold], MOST)
        await one.db.writer.write(lambda conn: settle(conn, rows))
        assert await raw(one) == (5 * MOST, 0)  # the overspend of a stalled call, no more


async def test_the_next_share_is_taken_before_a_call_has_to_wait_for_it(
    database_url, tmp_path
) -> None:
    """A lease down to half a share is topped up in the background: after the first call,
    no call waits for a lease write, and the budget still holds."""
    from gigi_core.llm.budgets import TOP_UP_TASK

    async with (
        open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as kernel,
        FakeOpenAI() as fake,
    ):
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=1000 * MOST)
        fake.reply_text("ok", usage=usage_of(MOST), times=40)
        on_call_path, in_background = 0, 0
        original = kernel.llm.budgets._write

        async def counted(fn):
            nonlocal on_call_path, in_background
            if asyncio.current_task().get_name() == TOP_UP_TASK:
                in_background += 1
            else:
                on_call_path += 1
            return await original(fn)

        kernel.llm.budgets._write = counted
        for _ in range(40):
            await chat(kernel)
            await asyncio.sleep(0)  # let a started top-up run, as a live bot's loop would
        assert on_call_path == 1 and in_background >= 2  # 40 calls: 2.5 shares
        spent, reserved = await raw(kernel)
        assert spent == 40 * MOST and spent + reserved <= 1000 * MOST


async def test_a_window_without_room_is_not_topped_up_on_every_call(database_url, tmp_path) -> None:
    """A top-up that finds no room marks the window dry: later calls hold from what is left
    without a write each, and the one that finds nothing left is refused."""
    async with (
        open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as kernel,
        FakeOpenAI() as fake,
    ):
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=8 * MOST)  # a share: 2 calls
        fake.reply_text("ok", usage=usage_of(MOST), times=8)
        writes = 0
        original = kernel.llm.budgets._write

        async def counted(fn):
            nonlocal writes
            writes += 1
            return await original(fn)

        kernel.llm.budgets._write = counted
        results = []
        for _ in range(10):
            try:
                await chat(kernel)
                results.append("ok")
            except BudgetExhausted:
                results.append("spent")
            await asyncio.sleep(0)
        assert results == ["ok"] * 8 + ["spent"] * 2
        assert writes <= 8  # never a write per call once the window is full
        spent, reserved = await raw(kernel)
        assert spent == 8 * MOST and reserved == 0
