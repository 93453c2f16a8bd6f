"""``kernel.llm.quota``: what one member has left on every budget that covers them, with
when each resets (the data behind ``/quota``); the same matching rule as the holds. Both
backends; a fake OpenAI on loopback."""

from __future__ import annotations

from datetime import UTC, datetime

from gigi_core import Actor
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, MOST, configure, request, usage_of
from tests.llm.service_helpers import llm_kernel

BOB = Actor(id="u1", roles=frozenset({"r-1"}))
NOW = datetime(2026, 3, 4, 10, 30, tzinfo=UTC)


def rows(allowances) -> dict[tuple[str, str, str], tuple[bool, int, int, str]]:
    return {
        (a.budget.scope_kind, a.budget.scope_id, a.budget.window): (
            a.exempt,
            a.used,
            a.left,
            a.resets_at.strftime("%Y-%m-%d %H:%M"),
        )
        for a in allowances
    }


async def test_a_member_sees_each_budget_that_covers_them(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        llm.budgets.clock = llm.budget_store.clock = NOW.timestamp
        await llm.set_budget(GUILD, "guild", None, limit=10 * MOST, reset_hour=6)
        await llm.set_budget(GUILD, "member", "*", limit=2 * MOST)
        await llm.set_budget(GUILD, "member", "u2", limit=MOST)  # someone else's
        await llm.set_budget(GUILD, "channel", "c1", limit=5 * MOST, window="weekly")
        await llm.set_budget(GUILD, "channel", "c9", limit=MOST)  # another channel
        await llm.set_budget(GUILD, "role", "r-1", limit=3 * MOST, window="monthly")
        await llm.set_budget(GUILD, "role", "r-2", limit=MOST)  # a role bob lacks
        await llm.set_budget(GUILD, "model", "openai-compatible/m-1", limit=4 * MOST)
        fake.reply_text("ok", usage=usage_of(MOST), times=2)
        await llm.chat(request(), guild_id=GUILD, actor=BOB, channel_id="c1")
        # another member's call spends the shared budgets, not bob's own
        await llm.chat(request(), guild_id=GUILD, actor=Actor(id="u3"), channel_id="c1")

        # a budget bob's role is exempt from, which nobody could spend
        await llm.set_budget(GUILD, "guild", None, limit=0, window="weekly", exempt_roles=["r-1"])
        seen = rows(await llm.quota(GUILD, BOB, "c1"))
        assert seen == {
            ("guild", "", "daily"): (False, 2 * MOST, 8 * MOST, "2026-03-05 06:00"),
            ("guild", "", "weekly"): (True, 0, 0, "2026-03-09 00:00"),
            ("member", "*", "daily"): (False, MOST, MOST, "2026-03-05 00:00"),
            ("channel", "c1", "weekly"): (False, 2 * MOST, 3 * MOST, "2026-03-09 00:00"),
            ("role", "r-1", "monthly"): (False, MOST, 2 * MOST, "2026-04-01 00:00"),
            ("model", "openai-compatible/m-1", "daily"): (
                False,
                2 * MOST,
                2 * MOST,
                "2026-03-05 00:00",
            ),
        }
        # outside a channel (a DM, the console) no channel budget covers the member
        away = rows(await llm.quota(GUILD, BOB, None))
        assert ("channel", "c1", "weekly") not in away and len(away) == 5


async def test_admins_are_shown_exempt_and_no_budgets_is_empty(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        llm = kernel.llm
        assert await llm.quota(GUILD, BOB, "c1") == []
        await llm.set_budget(GUILD, "guild", None, limit=100)
        [mine] = await llm.quota(GUILD, Actor(id="boss", is_admin=True), "c1")
        assert mine.exempt and mine.left == 100
        await llm.set_budget(GUILD, "guild", None, limit=100, exempt_admins=False)
        [held] = await llm.quota(GUILD, Actor(id="boss", is_admin=True), "c1")
        assert not held.exempt
        assert held.as_dict()["left"] == 100
