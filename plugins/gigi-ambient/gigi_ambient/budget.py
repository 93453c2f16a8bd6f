"""The daily token budget, held on the kernel's budgets before each call: the ambient
plugin's own ``plugin`` budget (``kernel.llm.plugin_budgets``), kept at the guild's
``daily_token_budget`` setting. The most a run may cost is held before it and settled with
the real usage after, or released when it failed, so a burst of messages, in one process
or many, never spends past the budget. A spent budget archives the message unanswered.

The day's spend is also added to ``ambient_daily.tokens``, for `/ambient status` only: the
kernel's window is what is enforced (`gigi llm budget show` shows it).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gigi_ambient.attempts import AmbientError
from gigi_ambient.store import AmbientStore, today

log = logging.getLogger(__name__)
PLUGIN = "ambient"  # the kernel budget's scope id
BYTES_PER_TOKEN = 3  # a generous estimate of a prompt's tokens: one per 3 bytes of UTF-8


class BudgetReached(AmbientError):
    """A budget cannot cover the call: the message is archived unanswered."""


def prompt_tokens(*texts: str) -> int:
    """An estimate of the tokens ``texts`` take in a prompt, on the high side."""
    return math.ceil(sum(len(t.encode()) for t in texts) / BYTES_PER_TOKEN)


@dataclass
class Spend:
    """What the call really used; set it once the reply says (0: released)."""

    used: int = 0


class Budget:
    def __init__(self, kernel: Any, store: AmbientStore, clock: Callable[[], datetime]) -> None:
        self.kernel = kernel
        self.store = store
        self.clock = clock

    @asynccontextmanager
    async def spend(self, guild_id: str, budget: int, most: int) -> AsyncIterator[Spend]:
        """Hold ``most`` tokens of the day's ``budget`` (0: no limit, nothing held) for
        the call made inside; raises ``BudgetReached`` when they do not fit."""
        from gigi_core.llm import BudgetExhausted

        budgets = self.kernel.llm.plugin_budgets
        spend = Spend()
        try:
            await budgets.ensure(guild_id, PLUGIN, budget)
            async with budgets.spend(guild_id, PLUGIN, most) as held:
                yield spend
                held.used = spend.used
        except BudgetExhausted as exc:
            raise BudgetReached(
                exc.message,
                hint="raise daily_token_budget (`gigi plugins config ambient --guild G "
                "--set-json ...`) or wait for the next UTC day",
                reasons=("budget_exhausted",),
            ) from None
        finally:
            if spend.used:
                try:  # the status counter; the kernel's window is what is enforced
                    await self.store.settle(guild_id, today(self.clock()), 0, spend.used)
                except Exception as exc:
                    log.warning("ambient: day's tokens not counted (%s)", type(exc).__name__)


def most_of_run(settings: Any, *texts: str) -> int:
    """The most one persona run may cost: each of its model calls (tool rounds, then the
    answer) resends the prompt and may write ``answer_tokens``."""
    calls = max(settings.tool_rounds, 0) + 1
    return calls * (prompt_tokens(*texts) + settings.answer_tokens)
