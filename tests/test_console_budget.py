"""The console's `/llm budget set|show|reset|remove` (decided by the policy engine) and
`/quota` (anyone's own allowance), and a spent budget's refusal as the console shows it
(issue 30). Both backends; a fake OpenAI on loopback."""

from __future__ import annotations

import asyncio
import io

import pytest

from gigi_core import Actor
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI

BOB = Actor(id="bob", roles=frozenset({"r-1"}))


@pytest.fixture
async def kernel(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    async with open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as k:
        yield k


async def drive(kernel, lines: list[str], actor: Actor | None = None) -> str:
    out = io.StringIO()
    stdin = io.StringIO("".join(line + "\n" for line in lines))
    console = ConsoleSurface(kernel, stdin=stdin, stdout=out, actor=actor)
    await asyncio.wait_for(console.run(), 30)
    return out.getvalue()


async def test_the_operator_sets_shows_resets_and_removes_budgets(kernel) -> None:
    output = await drive(
        kernel,
        [
            "/llm budget set limit=5000 reset_hour=6",
            "/llm budget set limit=800 each=member",
            "/llm budget set limit=2000 window=weekly role=r-1 exempt_roles=r-staff",
            "/llm budget show",
            "/llm budget reset window=weekly role=r-1",
            "/llm budget remove window=daily each=member",
            "/llm budget set limit=1 role=r-1 member=bob",
            "/llm budget set window=daily",
            "/llm budget set limit=10 colour=blue",
            "/llm budget remove window=monthly",
            "/llm",
        ],
    )
    assert "the guild: 5,000 tokens daily, resets at 06:00 UTC; exempt: no roles" in output
    assert "each member: 800 tokens daily" in output
    assert "role r-1: 2,000 tokens weekly, resets at 00:00 UTC; exempt: r-staff" in output
    assert "  the guild (daily): 0 of 5,000 spent, 0 held, 5,000 left; resets " in output
    assert "  each member (daily): 0 of 800 spent, 0 held, each its own" in output
    assert "Reset the weekly budget of role r-1" in output
    assert "Removed the daily budget of each member." in output
    assert "Error: give at most one of member=, channel=, role=, model=, each=" in output
    assert "Error: /llm budget set needs limit=N" in output
    assert "has no option 'colour'" in output
    assert "Error: guild console has no monthly budget for guild" in output
    assert "Usage: /llm budget set limit=N" in output
    kinds = {
        (s.budget.scope_kind, s.budget.window) for s in await kernel.llm.budget_status("console")
    }
    assert kinds == {("guild", "daily"), ("role", "weekly")}


async def test_members_see_their_quota_and_cannot_change_budgets(kernel) -> None:
    llm = kernel.llm
    await llm.set_budget("console", "guild", None, limit=5000, reset_hour=6)
    await llm.set_budget("console", "member", "*", limit=800)
    await llm.set_budget("console", "member", "carol", limit=1)  # not bob's
    await llm.set_budget("console", "role", "r-1", limit=2000, window="monthly")
    output = await drive(kernel, ["/quota", "/llm budget set limit=1", "/llm budget show"], BOB)
    assert "  the guild (daily): 5,000 of 5,000 tokens left; resets " in output
    assert "  your own (daily): 800 of 800 tokens left" in output
    assert "  role r-1 (monthly): 2,000 of 2,000 tokens left" in output
    assert "carol" not in output
    assert output.count("Not allowed:") == 2
    assert sorted(s.budget.limit for s in await llm.budget_status("console")) == [
        1,
        800,
        2000,
        5000,
    ]
    # the operator (an admin) is exempt by default
    mine = await drive(kernel, ["/quota"])
    assert "  the guild (daily): you are exempt" in mine


async def test_a_spent_budget_tells_the_console_which_and_when(kernel) -> None:
    async with FakeOpenAI() as fake:
        await kernel.llm.add_credential(
            "guild:console",
            "openai-compatible",
            "main",
            "sk-console-0123456789",
            base_url=fake.base_url,
        )
        await kernel.llm.set_profile("guild:console", "chat", "main", "m-1")
        await kernel.llm.set_budget("console", "member", "*", limit=5)
        output = await drive(kernel, ["hello"], BOB)
        assert "per-member daily budget of 5 tokens is smaller than this one call" in output
        assert "An admin can raise it." in output
        assert fake.requests_to("chat") == []


async def test_the_console_sets_a_money_budget_once_the_profiles_have_prices(kernel) -> None:
    await kernel.llm.add_credential(
        "guild:console", "openai-compatible", "main", "sk-console-0123456789",
        base_url="http://127.0.0.1:9/v1",
    )  # fmt: skip
    await kernel.llm.set_profile("guild:console", "chat", "main", "m-1")
    refused = await drive(kernel, ["/llm budget set limit=2.5 unit=money"])
    assert "guild:console's chat profile (m-1) has none" in refused
    await kernel.llm.set_profile(
        "guild:console", "chat", "main", "m-1", input_price=1, output_price=4
    )
    output = await drive(
        kernel,
        ["/llm budget set limit=2.5 unit=money", "/llm budget show", "/llm budget set limit=2.5"],
    )
    assert "the guild: 2.50 USD daily" in output
    assert "  the guild (daily): 0.00 USD of 2.50 USD spent, 0.00 USD held, 2.50 USD left" in (
        output
    )
    assert "the limit '2.5' is not a whole number of tokens" in output
