"""The daily token budget, held before each call: the most a call may cost is reserved in
one atomic statement (``AmbientStore.reserve``), the call made only if it fit, and the
reservation settled into the day's spend with the real usage afterwards, or released when
the call failed. So a burst of messages, in one process or many, never spends past the
budget (a check at queue time let every queued message through while nothing was spent).

A reservation a crashed process never settled stays held until the day ends (UTC days).
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
BYTES_PER_TOKEN = 3  # a generous estimate of a prompt's tokens: one per 3 bytes of UTF-8


class BudgetReached(AmbientError):
    """The day's token budget cannot cover the call: the message is archived unanswered."""


def prompt_tokens(*texts: str) -> int:
    """An estimate of the tokens ``texts`` take in a prompt, on the high side."""
    return math.ceil(sum(len(t.encode()) for t in texts) / BYTES_PER_TOKEN)


@dataclass
class Spend:
    """What the call really used; set it once the reply says (0: released)."""

    used: int = 0


class Budget:
    def __init__(self, store: AmbientStore, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.clock = clock

    @asynccontextmanager
    async def spend(self, guild_id: str, budget: int, most: int) -> AsyncIterator[Spend]:
        """Reserve ``most`` tokens of the day's ``budget`` (0: no limit, nothing held) for
        the call made inside; raises ``BudgetReached`` when they do not fit."""
        day = today(self.clock())
        held = 0
        if budget > 0:
            if not await self.store.reserve(guild_id, day, most, budget):
                raise BudgetReached(
                    f"the server's daily token budget ({budget}) cannot cover another "
                    f"call today (up to {most} tokens)",
                    hint="raise daily_token_budget (`gigi plugins config ambient --guild G "
                    "--set-json ...`) or wait for the next UTC day",
                    reasons=("budget",),
                )
            held = most
        spend = Spend()
        try:
            yield spend
        finally:
            try:
                if held or spend.used:
                    await self.store.settle(guild_id, day, held, spend.used)
            except Exception as exc:  # held until the day ends: never more than the budget
                log.warning("ambient: token reservation not settled (%s)", type(exc).__name__)


def most_of_run(settings: Any, *texts: str) -> int:
    """The most one persona run may cost: each of its model calls (tool rounds, then the
    answer) resends the prompt and may write ``answer_tokens``."""
    calls = max(settings.tool_rounds, 0) + 1
    return calls * (prompt_tokens(*texts) + settings.answer_tokens)
