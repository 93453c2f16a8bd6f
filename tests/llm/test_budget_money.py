"""Money budgets (issue 30): a profile declares prices per million input / output tokens; a
money budget holds the call's most tokens at those prices before the call and settles what
the reply cost; a profile without prices is refused at set time naming it and the flag.
Both backends; a fake OpenAI on loopback."""

from __future__ import annotations

import pytest

from gigi_core import Actor
from gigi_core.llm import BudgetExhausted
from gigi_core.llm.budget_money import parse_limit, show
from gigi_core.llm.records import LlmConfigError
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, MAX_OUT, MOST, configure, counters, request, usage_of
from tests.llm.service_helpers import llm_kernel

MEMBER = Actor(id="u1")
IN, OUT = 2.0, 8.0  # USD per million tokens
HOLD = (MOST - MAX_OUT) * 2 + MAX_OUT * 8  # millionths of a dollar: the prompt and the cap
COST = (MOST - 1) * 2 + 1 * 8  # what usage_of(MOST) costs: MOST - 1 in, 1 out


async def chat(kernel):
    return await kernel.llm.chat(request(), guild_id=GUILD, actor=MEMBER, channel_id="c1")


async def priced(kernel, base_url: str) -> None:
    await configure(kernel, base_url)
    await kernel.llm.set_profile(
        f"guild:{GUILD}", "chat", "main", "m-1", input_price=IN, output_price=OUT
    )


async def test_a_money_budget_holds_at_the_profiles_prices_and_settles_the_cost(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await priced(kernel, fake.base_url)
        budget = await kernel.llm.set_budget(
            GUILD, "guild", None, limit=parse_limit("0.002", "money"), unit="money"
        )
        assert (budget.unit, budget.limit, budget.currency) == ("money", 2000, "USD")
        fake.reply_text("ok", usage=usage_of(MOST), times=10)
        ok = 0
        with pytest.raises(BudgetExhausted) as info:
            for _ in range(10):
                await chat(kernel)
                ok += 1
        # a call fits while the room left covers its hold: 2000 - k x COST >= HOLD
        assert ok == (2000 - HOLD) // COST + 1
        text = str(info.value)
        assert "server's daily budget of 0.002 USD is spent" in text
        assert f"this call may cost up to {show(HOLD, 'money', 'USD')}" in text
        assert await counters(kernel) == (ok * COST, 0)
        # /quota and the budget lists show money as money
        [allowance] = await kernel.llm.quota(GUILD, MEMBER)
        assert allowance.budget.amount(allowance.left) == show(2000 - ok * COST, "money", "USD")
        assert (allowance.budget.amount(2000), allowance.budget.noun) == ("0.002 USD", "")


async def test_prices_are_checked_and_a_money_budget_needs_them(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        with pytest.raises(LlmConfigError, match="prices come in pairs") as info:
            await llm.set_profile(f"guild:{GUILD}", "chat", "main", "m-1", input_price=1.0)
        assert "--input-price and --output-price" in str(info.value)
        with pytest.raises(LlmConfigError, match="not a currency code"):
            await llm.set_profile(
                f"guild:{GUILD}", "chat", "main", "m-1", input_price=1, output_price=2, currency="$"
            )
        with pytest.raises(LlmConfigError, match="guild:g1's chat profile \\(m-1\\) has none"):
            await llm.set_budget(GUILD, "guild", None, limit=5, unit="money")
        await llm.set_profile(
            f"guild:{GUILD}", "chat", "main", "m-1", input_price=1, output_price=2, currency="eur"
        )
        budget = await llm.set_budget(GUILD, "member", "*", limit=5_000_000, unit="money")
        assert budget.currency == "EUR" and budget.show(budget.limit) == "5.00 EUR"
        # prices removed later: a call the money budget covers is refused, naming the flags
        await llm.set_profile(f"guild:{GUILD}", "chat", "main", "m-1")
        with pytest.raises(LlmConfigError, match="declares no prices") as info:
            await chat(kernel)
        assert "--input-price P --output-price Q" in str(info.value)
        assert fake.requests_to("chat") == []


def test_amounts_read_as_money() -> None:
    assert parse_limit("2.5", "money") == 2_500_000
    assert show(2_500_000, "money", "USD") == "2.50 USD"
    assert show(700, "money", "EUR") == "0.0007 EUR"
    assert show(1200, "tokens", None) == "1200 tokens"
    with pytest.raises(LlmConfigError, match="the limit 'two' is not an amount of money"):
        parse_limit("two", "money")
