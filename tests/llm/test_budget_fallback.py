"""A profile's budget fallback model (issue 30): once a budget refuses the profile's model,
the cheaper model on the same credential answers, recorded in usage; without one, or when
the fallback's budgets are spent too, the refusal says which budget and when it resets.
Both backends; a fake OpenAI on loopback; the CLI option through click."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gigi_core import Actor
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.llm import BudgetExhausted
from gigi_core.store.sealing import generate_key
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, MOST, configure, request, usage_of
from tests.llm.service_helpers import llm_kernel

MEMBER = Actor(id="u1")


async def chat(kernel):
    return await kernel.llm.chat(request(), guild_id=GUILD, actor=MEMBER, channel_id="c1")


async def test_a_spent_model_budget_moves_the_call_to_the_budget_fallback_model(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        await llm.set_budget(GUILD, "model", "openai-compatible/m-1", limit=MOST)
        fake.reply_text("ok", usage=usage_of(MOST), times=3)
        await chat(kernel)
        # no fallback configured: the refusal names the budget and its reset
        with pytest.raises(BudgetExhausted, match="model openai-compatible/m-1 daily budget"):
            await chat(kernel)
        await llm.set_profile(
            f"guild:{GUILD}", "chat", "main", "m-1", budget_fallback_model="m-cheap"
        )
        reply = await chat(kernel)
        assert reply.text == "ok"
        assert [r.json["model"] for r in fake.requests_to("chat")] == ["m-1", "m-cheap"]
        events = await llm.usage_log.events(GUILD, limit=10)
        served = next(e for e in events if e["model"] == "m-cheap")
        assert (served["status"], served["failover_reason"]) == ("ok", "budget_exhausted")
        # a budget covering the fallback too: the profile's own refusal is what is said
        await llm.set_budget(GUILD, "guild", None, limit=0)
        with pytest.raises(BudgetExhausted, match="(model openai-compatible/m-1|server's) daily"):
            await chat(kernel)  # whichever of the profile model's budgets refused first
        assert len(fake.requests_to("chat")) == 2


async def test_the_budget_fallback_model_respects_the_members_role_policy(
    database_url, tmp_path
) -> None:
    """A role allowed only the profile's model keeps the budget's refusal; a role allowed
    the fallback too, an admin, or a member whose roles are not ruled, get the fallback."""
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        llm = kernel.llm
        await llm.set_profile(
            f"guild:{GUILD}", "chat", "main", "m-1", budget_fallback_model="m-cheap"
        )
        await llm.places.set_role(GUILD, "r-strict", ["m-1"])
        await llm.places.set_role(GUILD, "r-both", ["m-1", "m-cheap"])
        await llm.set_budget(GUILD, "model", "openai-compatible/m-1", limit=0, exempt_admins=False)

        async def chat_as(actor: Actor):
            return await llm.chat(request(), guild_id=GUILD, actor=actor, channel_id="c1")

        strict = Actor(id="u1", roles=frozenset({"r-strict"}))
        with pytest.raises(BudgetExhausted, match="model openai-compatible/m-1 daily budget"):
            await chat_as(strict)
        assert fake.requests_to("chat") == []  # the cheaper model was never called
        fake.reply_text("ok", usage=usage_of(MOST), times=3)
        for allowed in (
            Actor(id="u2", roles=frozenset({"r-strict", "r-both"})),
            Actor(id="u3", roles=frozenset({"r-strict"}), is_admin=True),
            Actor(id="u4", roles=frozenset({"r-other"})),
        ):
            assert (await chat_as(allowed)).text == "ok"
        assert [r.json["model"] for r in fake.requests_to("chat")] == ["m-cheap"] * 3


def test_the_cli_sets_and_shows_the_budget_fallback_model(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "openai")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    runner = CliRunner()

    def gigi(*args: str):
        return runner.invoke(cli, list(args), obj=CliState(), input="sk-test-0123456789\n")

    added = gigi(
        "llm", "credential", "add", "--owner", "guild:g1", "--provider", "openai",
        "--label", "main", "--api-key-stdin",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    made = gigi(
        "llm", "profile", "set", "--owner", "guild:g1", "--purpose", "chat",
        "--credential", "main", "--model", "gpt-4o", "--budget-fallback-model", "gpt-4o-mini",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "gpt-4o-mini once a budget is spent" in made.output
    bad = gigi(
        "llm", "profile", "set", "--owner", "guild:g1", "--purpose", "chat",
        "--credential", "main", "--model", "gpt-4o", "--budget-fallback-model", " ",
    )  # fmt: skip
    assert bad.exit_code != 0 and "budget fallback model" in bad.output
