"""What the tool loop (``runner``) and one call (``calls``) share: the signals that end a
step early and the step timer. Both import this module; neither imports the other at run time.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gigi_core.agent.contracts import Reply
    from gigi_core.llm.budgets import BudgetExhausted

STOPPED = {
    "max_steps": "the step limit ({}) was reached",
    "max_tool_calls": "the tool-call limit ({}) was reached",
    "max_llm_calls": "the model-call limit ({}) was reached",
    "max_tokens": "the token budget ({}) was used up",
    "invalid_tool_calls": "the model kept proposing invalid tool calls ({} allowed)",
}


class Paused(Exception):
    """Internal signal: the run waits for a confirmation; carries the reply to show."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply


class Stop(Exception):
    """Internal signal: the run ends now with a named reason."""

    def __init__(self, reason: str, text: str, status: str = "done") -> None:
        self.reason, self.text, self.status = reason, text, status

    @classmethod
    def budget(cls, reason: str, limit: int) -> Stop:
        return cls(reason, "I stopped before finishing: " + STOPPED[reason].format(limit) + ".")

    @classmethod
    def spent(cls, exc: BudgetExhausted) -> Stop:
        """A model budget refused the call: the member reads which budget and when it resets,
        and what an admin can do (the exception's hint is the operator's shell command)."""
        if exc.most > exc.budget.limit:
            then = "An admin can raise it."
        else:
            then = "An admin can raise or reset it before then."
        return cls("budget_exhausted", f"I cannot answer: {exc.message}. {then}", "failed")


def ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading), for step rows."""
    return round((time.perf_counter() - started) * 1000, 3)
