"""A process whose budget lease another process reclaimed (it stalled past the lease's
expiry) must not keep holding calls from it: its take and its renew find the row gone,
drop the lease and take a fresh share by the normal path, or refuse. Both backends; two
kernels on one database stand for two processes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gigi_core import Actor
from gigi_core.kernel import Kernel
from gigi_core.llm import BudgetExhausted
from gigi_core.llm.budget_leases import LEASE_SECONDS
from tests.llm.budget_helpers import (
    GUILD,
    MOST,
    configure,
    counters,
    request,
    two_processes,
    usage_of,
)

NOON = datetime(2026, 3, 4, 12, 0, tzinfo=UTC).timestamp()  # far from a window's reset


async def chat(kernel: Kernel) -> None:
    await kernel.llm.chat(request(), guild_id=GUILD, actor=Actor(id="u1"), channel_id="c1")


async def served(kernel: Kernel, most: int) -> int:
    """How many calls ``kernel`` gets before the budget refuses (at most ``most``)."""
    n = 0
    for _ in range(most):
        try:
            await chat(kernel)
        except BudgetExhausted:
            break
        n += 1
    return n


async def stall_and_reclaim(one: Kernel, two: Kernel, base_url: str) -> None:
    """``one`` takes a share of a 16-call budget (4 calls) and uses one call of it, then
    stalls; ``two``, past the lease's expiry, reclaims it and spends the other 15."""
    for k in (one, two):
        k.llm.budgets.clock = lambda: NOON
    await configure(one, base_url)
    await one.llm.set_budget(GUILD, "guild", None, limit=16 * MOST)
    await chat(one)
    await one.db.writer.drain()
    two.llm.budgets.clock = lambda: NOON + LEASE_SECONDS + 1
    assert await served(two, 20) == 15
    one.llm.budgets.clock = lambda: NOON + LEASE_SECONDS + 2  # one wakes up


async def test_a_take_on_a_reclaimed_lease_serves_no_call(database_url, tmp_path) -> None:
    async with two_processes(database_url, tmp_path) as (one, two, fake):
        fake.reply_text("ok", usage=usage_of(MOST), times=40)
        await stall_and_reclaim(one, two, fake.base_url)
        stale = next(iter(one.llm.budgets.leases.values()))
        assert stale.free == 3 * MOST  # what one still believes it holds
        with pytest.raises(BudgetExhausted):
            await chat(one)
        assert await served(one, 10) == 0
        assert all(lease.holder != stale.holder for lease in one.llm.budgets.leases.values())
        assert len(fake.requests) == 16
        spent, reserved = await counters(one)
        assert (spent, reserved) == (16 * MOST, 0)


async def test_a_renew_drops_a_reclaimed_lease(database_url, tmp_path) -> None:
    async with two_processes(database_url, tmp_path) as (one, two, fake):
        fake.reply_text("ok", usage=usage_of(MOST), times=40)
        await stall_and_reclaim(one, two, fake.base_url)
        await one.llm.budgets._renew()  # the sweeper's round: the row is gone
        assert one.llm.budgets.leases == {}
        assert await served(one, 10) == 0
        await one.llm.set_budget(GUILD, "guild", None, limit=18 * MOST)  # room again
        assert await served(one, 10) == 2  # a fresh share, by the normal path
        spent, _ = await counters(one)
        assert spent == 18 * MOST
