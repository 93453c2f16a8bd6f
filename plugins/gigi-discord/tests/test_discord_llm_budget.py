"""`/llm budget set|show|reset|remove` (admins, through the policy engine) and `/quota`
(any member: their own allowance on every budget covering them); a member whose budget is
spent reads which one and when it resets, after `/ask` and after a mention (issue 30)."""

from __future__ import annotations

import discord
from discord_world import world

from gigi_core.testing.fake_providers import FakeOpenAI


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


async def _show_llm_to_everyone(w) -> None:
    commands = await w.bot.tree.fetch_commands()
    [command] = [c for c in commands if c.name == "llm"]
    w.guild.set_command_permissions(command, {w.guild.default_role: True})


async def _configure(w, fake) -> None:
    owner = f"guild:{w.gid}"
    await w.kernel.llm.add_credential(
        owner, "openai-compatible", "main", "sk-budget-0123456789", base_url=fake.base_url
    )
    await w.kernel.llm.set_profile(owner, "chat", "main", "m-1")


async def test_admins_set_show_reset_and_remove_budgets(tmp_path) -> None:
    async with world(tmp_path) as w:
        role = w.guild.create_role("Regulars")
        done = await w.admin.slash(w.channel, "llm budget set", limit=5000, reset_hour=6)
        assert done.ephemeral and "The server: 5,000 tokens daily, resets at 06:00 UTC" in _text(
            done
        )
        each = await w.admin.slash(w.channel, "llm budget set", limit=800, each="member")
        assert "Each member: 800 tokens daily" in _text(each)
        shared = await w.admin.slash(
            w.channel, "llm budget set", limit=2000, window="weekly", role=role
        )
        assert f"<@&{role.id}>: 2,000 tokens weekly" in _text(shared)
        both = await w.admin.slash(w.channel, "llm budget set", limit=1, role=role, each="member")
        assert both.ephemeral and "at most one of" in _text(both)

        stored = {
            (b.budget.scope_kind, b.budget.scope_id, b.budget.window)
            for b in await w.kernel.llm.budget_status(w.gid)
        }
        assert stored == {
            ("guild", "", "daily"),
            ("member", "*", "daily"),
            ("role", str(role.id), "weekly"),
        }
        shown = _text(await w.admin.slash(w.channel, "llm budget show"))
        assert "**The server** (daily): 0 of 5,000 tokens spent, 0 held, 5,000 left" in shown
        assert "**Each member** (daily)" in shown and "each its own" in shown
        assert "(UTC)" not in shown and "UTC)" in shown  # the reset, also in UTC

        reset = await w.admin.slash(w.channel, "llm budget reset", window="weekly", role=role)
        assert reset.ephemeral and f"Reset <@&{role.id}>'s weekly budget" in _text(reset)
        gone = await w.admin.slash(w.channel, "llm budget remove", window="daily", each="member")
        assert "Removed Each member's daily budget" in _text(gone)
        missing = await w.admin.slash(w.channel, "llm budget remove", window="monthly")
        assert missing.ephemeral and "has no monthly budget for guild" in _text(missing)
        assert len(await w.kernel.llm.budget_status(w.gid)) == 2


async def test_budget_commands_are_decided_by_the_policy(tmp_path) -> None:
    async with world(tmp_path) as w:
        await _show_llm_to_everyone(w)
        refused = await w.member.slash(w.channel, "llm budget set", limit=10)
        assert refused.ephemeral and "llm.provider.write" in _text(refused)
        hidden = await w.member.slash(w.channel, "llm budget show")
        assert "llm.usage.read" in _text(hidden)
        assert await w.kernel.llm.budget_status(w.gid) == []

        await w.kernel.add_grant(w.gid, "llm.usage.read", "user", str(w.member.id))
        shown = await w.member.slash(w.channel, "llm budget show")
        assert "No budgets here" in _text(shown)
        still = await w.member.slash(w.channel, "llm budget set", limit=10)
        assert "llm.provider.write" in _text(still)

        await w.kernel.add_grant(w.gid, "llm.provider.write", "user", str(w.member.id))
        done = await w.member.slash(w.channel, "llm budget set", limit=10)
        assert "The server: 10 tokens daily" in _text(done)
        [status] = await w.kernel.llm.budget_status(w.gid)
        assert status.budget.updated_by == str(w.member.id)


async def test_quota_shows_a_member_their_own_allowance(tmp_path) -> None:
    async with world(tmp_path) as w:
        role = w.guild.create_role("Regulars")
        carol = w.guild.add_member(w.env.create_user("carol"), roles=[role])
        none = await w.member.slash(w.channel, "quota")
        assert none.ephemeral and "No model budget limits you here" in _text(none)

        llm = w.kernel.llm
        await llm.set_budget(w.gid, "guild", None, limit=5000, reset_hour=6)
        await llm.set_budget(w.gid, "member", "*", limit=800)
        await llm.set_budget(w.gid, "member", str(w.admin.id), limit=1)  # not bob's
        await llm.set_budget(w.gid, "channel", str(w.channel.id), limit=3000, window="weekly")
        await llm.set_budget(w.gid, "model", "openai", limit=4000)
        mine = await w.member.slash(w.channel, "quota")
        text = _text(mine)
        assert mine.ephemeral
        assert "**The server** (daily): 5,000 of 5,000 tokens left; resets <t:" in text
        assert "**Your own** (daily): 800 of 800 tokens left" in text
        assert f"**<#{w.channel.id}>** (weekly): 3,000 of 3,000 tokens left" in text
        assert "**Model `openai`** (daily): 4,000 of 4,000" in text
        assert f"<@{w.admin.id}>" not in text  # another member's budget is not shown
        # in a thread, the thread's channel's budget is the one that counts
        thread = await w.bot.get_channel(w.channel.id).create_thread(
            name="side", type=discord.ChannelType.public_thread
        )
        await w.env.settle()
        [handle] = [t for t in w.channel.threads if t.id == thread.id]
        there = _text(await w.member.slash(handle, "quota"))
        assert f"**<#{w.channel.id}>** (weekly): 3,000 of 3,000 tokens left" in there
        # an admin is exempt from the budgets that exempt admins (the default)
        boss = _text(await w.admin.slash(w.channel, "quota"))
        assert "**The server** (daily): you are exempt" in boss
        assert "**You** (daily): you are exempt" in boss
        # a role's budget is shown to the members who hold the role, and only to them
        await llm.set_budget(w.gid, "role", str(role.id), limit=2000, window="monthly")
        assert f"**<@&{role.id}>** (monthly): 2,000 of 2,000" in _text(
            await carol.slash(w.channel, "quota")
        )
        assert f"<@&{role.id}>" not in _text(await w.member.slash(w.channel, "quota"))


async def test_a_spent_budget_tells_the_member_which_and_when(tmp_path) -> None:
    async with FakeOpenAI() as fake, world(tmp_path, plugins=["openai"]) as w:
        await _configure(w, fake)
        await w.kernel.llm.set_budget(w.gid, "member", "*", limit=5)
        asked = await w.member.slash(w.channel, "ask", question="hello?")
        [said] = asked.followups
        assert said.ephemeral
        assert "per-member daily budget of 5 tokens is smaller than this one call" in said.content
        assert "not set up correctly" not in said.content and "gigi llm" not in said.content
        await w.kernel.llm.set_budget(w.gid, "member", "*", limit=100_000)
        await w.kernel.llm.set_budget(w.gid, "guild", None, limit=100_000, window="weekly")
        await w.kernel.llm.reset_budget(w.gid, "guild", None, "weekly")
        # spend the server's week: the next call does not fit and the mention says so
        [status] = [
            s for s in await w.kernel.llm.budget_status(w.gid) if s.budget.scope_kind == "guild"
        ]
        await _spend(w.kernel, status, 100_000 - 3)
        [reply] = await w.mention(w.member, "hello?")
        assert "server's weekly budget of 100000 tokens is spent: 3 tokens are left" in (
            reply.content
        )
        assert "resets at" in reply.content and "UTC" in reply.content
        assert fake.requests_to("chat") == []


async def _spend(kernel, status, tokens: int) -> None:
    from gigi_core.store.budget_tables import LlmBudgetWindow

    async with kernel.db.session() as s:
        s.add(
            LlmBudgetWindow(
                budget_id=status.budget.id,
                subject="",
                starts=int(status.starts.timestamp()),
                spent=tokens,
                reserved=0,
            )
        )


async def test_admins_set_a_money_budget_once_the_profiles_have_prices(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w, FakeOpenAI() as fake:
        await _configure(w, fake)
        refused = await w.admin.slash(w.channel, "llm budget set", limit=2.5, unit="money")
        assert "chat profile (m-1) has none" in _text(refused)
        assert "`/llm profile set`" in _text(refused) and "input_price and output_price" in (
            _text(refused)
        )
        owner = f"guild:{w.gid}"
        await w.kernel.llm.set_profile(owner, "chat", "main", "m-1", input_price=1, output_price=4)
        done = await w.admin.slash(w.channel, "llm budget set", limit=2.5, unit="money")
        assert "2.50 USD daily" in _text(done)
        shown = await w.admin.slash(w.channel, "llm budget show")
        assert "0.00 USD of 2.50 USD spent" in _text(shown)
        tokens = await w.admin.slash(w.channel, "llm budget set", limit=2.5)
        assert "limit '2.5' is not a whole number of tokens" in _text(tokens)


async def test_a_plugins_own_allowance_is_set_shown_and_removed(tmp_path) -> None:
    async with world(tmp_path) as w:
        done = await w.admin.slash(w.channel, "llm budget set", limit=3000, plugin="ambient")
        assert done.ephemeral and "Plugin `ambient`: 3,000 tokens daily" in _text(done)
        [status] = await w.kernel.llm.budget_status(w.gid)
        assert (status.budget.scope_kind, status.budget.scope_id) == ("plugin", "ambient")
        assert "**Plugin `ambient`** (daily)" in _text(
            await w.admin.slash(w.channel, "llm budget show")
        )
        both = await w.admin.slash(
            w.channel, "llm budget set", limit=1, plugin="ambient", model="x"
        )
        assert "at most one of" in _text(both) and "`plugin`" in _text(both)
        gone = await w.admin.slash(w.channel, "llm budget remove", window="daily", plugin="ambient")
        assert "Removed Plugin `ambient`'s daily budget" in _text(gone)
        assert await w.kernel.llm.budget_status(w.gid) == []
