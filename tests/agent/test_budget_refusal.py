"""A model budget that refuses a run's call (issue 30): the run ends with its own reason,
``budget_exhausted``, and the reply tells the member which budget and when it resets.
Both backends; a fake OpenAI on loopback, no network."""

from __future__ import annotations

from datetime import UTC, datetime

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, configure
from tests.llm.service_helpers import llm_kernel

MEMBER = Actor(id="u1", roles=frozenset({"r-members"}))


def ask(actor: Actor = MEMBER) -> Request:
    return Request(actor=actor, guild_id=GUILD, channel_id="c1", kind="mention", text="hi")


async def test_a_spent_budget_ends_the_run_with_its_own_reason(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        kernel.llm.budgets.clock = datetime(2026, 3, 4, 10, 30, tzinfo=UTC).timestamp
        await kernel.llm.set_budget(GUILD, "member", "*", limit=10, reset_hour=6)
        rt = AgentRuntime(kernel)
        reply = await rt.handle(ask())
        assert reply.status == "failed" and reply.termination_reason == "budget_exhausted"
        assert "per-member daily budget of 10 tokens" in reply.text
        assert fake.requests_to("chat") == []  # refused before the provider
        stored = await rt.runs.get(reply.run_id)
        assert stored.termination_reason == "budget_exhausted"


async def test_the_member_reads_which_budget_and_when_it_resets(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        kernel.llm.budgets.clock = datetime(2026, 3, 4, 10, 30, tzinfo=UTC).timestamp
        await kernel.llm.set_budget(GUILD, "guild", None, limit=100_000, reset_hour=6)
        await kernel.llm.set_budget(GUILD, "role", "r-members", limit=100_000, window="weekly")
        # spend the role's week so that the next call does not fit
        budget = (await kernel.llm.budget_status(GUILD))[1].budget
        assert budget.scope_kind == "role"
        await _spend(kernel, budget.id, 100_000 - 5)
        reply = await AgentRuntime(kernel).handle(ask())
        assert reply.termination_reason == "budget_exhausted"
        assert "role r-members weekly budget of 100000 tokens is spent" in reply.text
        assert "5 tokens are left" in reply.text
        assert "resets at 2026-03-09 00:00 UTC" in reply.text
        # a member is told what they can do, not an operator's shell command
        assert "gigi llm" not in reply.text
        assert "admin" in reply.text
        # an admin is exempt (the default) and gets an answer
        fake.reply_text("hello")
        boss = await AgentRuntime(kernel).handle(ask(Actor(id="boss", is_admin=True)))
        assert boss.status == "done" and boss.text == "hello"


async def test_a_budget_smaller_than_one_call_says_so(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "channel", "c1", limit=3)
        reply = await AgentRuntime(kernel).handle(ask())
        assert reply.termination_reason == "budget_exhausted"
        assert "channel c1 daily budget of 3 tokens is smaller than this one call" in reply.text
        assert "gigi llm" not in reply.text


async def _spend(kernel, budget_id: str, tokens: int) -> None:
    """Settled spend in the budget's current window, as earlier calls would have left."""
    from gigi_core.llm.budgets import window_start
    from gigi_core.store.budget_tables import LlmBudgetWindow

    [status] = [s for s in await kernel.llm.budget_status(GUILD) if s.budget.id == budget_id]
    start = window_start(
        status.budget.window,
        status.budget.reset_hour,
        datetime.fromtimestamp(kernel.llm.budgets.clock(), UTC),
    )
    async with kernel.db.session() as s:
        s.add(
            LlmBudgetWindow(
                budget_id=budget_id,
                subject="",
                starts=int(start.timestamp()),
                spent=tokens,
                reserved=0,
            )
        )
