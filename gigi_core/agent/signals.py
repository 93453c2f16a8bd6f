"""What the tool loop (``runner``) and one call (``calls``) share: the signals that end a
step early and the step timer. Both import this module; neither imports the other at run time.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gigi_core.agent.contracts import Reply

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


def ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading), for step rows."""
    return round((time.perf_counter() - started) * 1000, 3)
