"""Spend against budget in the usage reports (issue 30): the ``llm.usage.guild`` tool and
``gigi llm usage`` show each budget's spent, held and limit for the current window;
``gigi llm budget show`` says where alerts go, or that they go nowhere."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.store.sealing import generate_key
from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.outbox import RecordingPoster
from tests.llm.budget_helpers import GUILD, MOST, configure, request, usage_of
from tests.llm.service_helpers import llm_kernel

ADMIN = Actor(id="boss", is_admin=True)


async def test_the_usage_tool_reports_spend_against_each_budget(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=10 * MOST, window="weekly")
        await kernel.llm.set_budget(GUILD, "member", "*", limit=5 * MOST)
        fake.reply_text("ok", usage=usage_of(3 * MOST))
        await kernel.llm.chat(request(), guild_id=GUILD, actor=Actor(id="u1"), channel_id="c1")
        ask = Request(actor=ADMIN, guild_id=GUILD, channel_id="c1", kind="mention", text="")
        reply = await kernel.agent.direct(ask, "llm.usage.guild", {})
        assert reply.status == "done", reply
        budgets = {b["scope"]: b for b in reply.citations[0].result["budgets"]}
        guild, member = budgets["guild"], budgets["member *"]
        assert (guild["window"], guild["limit"], guild["spent"], guild["reserved"]) == (
            "weekly",
            10 * MOST,
            3 * MOST,
            0,
        )
        assert guild["left"] == 7 * MOST and guild["resets_at"]
        assert (member["limit"], member["spent"], member["left"]) == (5 * MOST, 3 * MOST, None)


async def test_a_changed_limit_announces_its_thresholds_again(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        poster = RecordingPoster()
        kernel.outbox.register("test", poster)
        await kernel.configure_plugin(GUILD, "gigi", {"staff_channel": "900"})
        await kernel.llm.set_budget(GUILD, "guild", None, limit=100 * MOST)
        for spend, limit in ((85, None), (80, 200 * MOST)):  # 85 %; then 165 of 200: 82 %
            if limit:
                await kernel.llm.set_budget(GUILD, "guild", None, limit=limit)
            fake.reply_text("ok", usage=usage_of(spend * MOST))
            await kernel.llm.chat(request(), guild_id=GUILD, actor=Actor(id="u1"))
        await kernel.db.writer.drain()
        await kernel.llm.caller.alerts.drain()
        texts = [p.text for p in poster.posts]
        assert len(texts) == 2 and f"80 % of its {200 * MOST} tokens" in texts[1], texts


@pytest.fixture
def gigi(tmp_path, monkeypatch):
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "openai")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    runner = CliRunner()

    def invoke(*args: str):
        result = runner.invoke(cli, list(args), obj=CliState())
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


def test_gigi_llm_usage_and_budget_show(gigi) -> None:
    none = gigi("llm", "usage", "--guild", "g1")
    assert none.exit_code == 0 and "No budgets in guild g1" in none.output
    assert gigi("llm", "budget", "set", "--guild", "g1", "--limit", "5000").exit_code == 0
    usage = gigi("llm", "usage", "--guild", "g1")
    assert usage.exit_code == 0 and "Budgets, current window:" in usage.output
    line = next(x for x in usage.output.splitlines() if x.startswith("guild "))
    assert line.split()[:6] == ["guild", "daily", "5000", "0", "0", "5000"]
    assert json.loads(gigi("llm", "usage", "--guild", "g1", "--json").output) == []
    shown = gigi("llm", "budget", "show", "--guild", "g1").output
    assert "No staff channel is set, so budget alerts (80, 95, 100 %) are not posted" in shown
    bad = gigi(
        "plugins", "config", "gigi", "--guild", "g1", "--set-json", '{"staff_channel": "#x"}'
    )
    assert bad.exit_code != 0 and "staff_channel" in bad.output
    ok = gigi(
        "plugins", "config", "gigi", "--guild", "g1", "--set-json", '{"staff_channel": "900"}'
    )
    assert ok.exit_code == 0, ok.output
    shown = gigi("llm", "budget", "show", "--guild", "g1").output
    assert "Alerts at 80, 95 and 100 % of a window go to channel 900." in shown
