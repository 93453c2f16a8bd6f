"""Budget alerts at shutdown (issue 28): a call that crosses a threshold right before the
kernel closes still posts its staff notice, whether its settle was awaited or queued behind
the reply; and a notice that cannot be posted does not hold the close up past its bound.
Both backends."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pytest

from gigi_core import Actor
from gigi_core.events import OutboundMessage, PostedButton, PostedMessage
from gigi_core.kernel import Kernel
from gigi_core.llm.budget_alerts import BudgetAlerts
from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.outbox import RecordingPoster
from tests.llm.budget_helpers import GUILD, MOST, configure, request, usage_of
from tests.llm.service_helpers import llm_kernel

STAFF = "900"


async def cross_80_percent(kernel: Kernel, durability: str) -> None:
    """One call that spends 85 % of a fresh guild budget."""
    await kernel.llm.set_budget(GUILD, "guild", None, limit=100 * MOST)
    await kernel.llm.chat(
        request(), guild_id=GUILD, actor=Actor(id="u1"), channel_id="c1", durability=durability
    )


@pytest.mark.parametrize("durability", ["step", "turn", "deferred"])
async def test_a_threshold_crossed_right_before_close_is_still_announced(
    database_url, tmp_path, durability
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        poster = RecordingPoster()
        kernel.outbox.register("test", poster)
        await kernel.configure_plugin(GUILD, "gigi", {"staff_channel": STAFF})
        fake.reply_text("ok", usage=usage_of(85 * MOST))
        await cross_80_percent(kernel, durability)
        await kernel.close()  # no drain of our own: the close must post it
        assert [(p.channel_id, "has reached 80 %" in p.text) for p in poster.posts] == [
            (STAFF, True)
        ]
        assert kernel.llm.caller.alerts.undelivered == 0


@dataclass
class StuckPoster(RecordingPoster):
    """A surface whose post never returns (a gateway gone quiet)."""

    async def post(
        self, message: OutboundMessage, buttons: tuple[PostedButton, ...]
    ) -> PostedMessage:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_a_notice_that_cannot_be_posted_does_not_hold_up_the_close(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(BudgetAlerts, "close_seconds", 0.5)
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        await configure(kernel, fake.base_url)
        kernel.outbox.register("test", StuckPoster())
        await kernel.configure_plugin(GUILD, "gigi", {"staff_channel": STAFF})
        fake.reply_text("ok", usage=usage_of(85 * MOST))
        await cross_80_percent(kernel, "step")
        started = time.monotonic()
        await asyncio.wait_for(kernel.close(), 10)
        assert time.monotonic() - started < 5
        assert kernel.llm.caller.alerts.undelivered == 1  # counted, as any lost notice is
