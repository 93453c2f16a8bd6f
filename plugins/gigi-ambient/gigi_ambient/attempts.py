"""Attempts at one answer: a failed attempt waits an exponential backoff with jitter before the
next, and three failures in a row raise.

An attempt fails when the run ends without a valid envelope: invalid JSON or a schema
mismatch, a refusal, or a provider error. There is no repair step and no relaxed parsing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from gigi_core import GigiError

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


class AmbientError(GigiError):
    """The ambient responder could not produce an answer; the message says why.

    ``reasons`` are the attempts' termination reasons: what a log line may carry (the
    message can quote a provider's words).
    """

    def __init__(self, message: str, *, hint: str | None = None, reasons: tuple[str, ...] = ()):
        super().__init__(message, hint=hint)
        self.reasons = reasons


class AttemptFailed(Exception):
    """One attempt's failure; ``reason`` is a termination reason (``invalid_output``, ...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class Backoff:
    """``base * factor**n`` seconds, times a jitter in [0.5, 1.5), capped at ``cap``."""

    attempts: int = 3
    base: float = 1.0
    factor: float = 2.0
    cap: float = 30.0
    jitter: Callable[[], float] = field(default=random.random)
    sleep: Sleep = field(default=asyncio.sleep)

    def delay(self, failed: int) -> float:
        raw = self.base * self.factor ** max(failed - 1, 0)
        return min(self.cap, raw * (0.5 + self.jitter()))

    async def run(self, attempt: Callable[[int], Awaitable[T]]) -> T:
        """Call ``attempt(n)`` until it returns; the last failure becomes an ``AmbientError``."""
        reasons: list[str] = []
        for n in range(1, self.attempts + 1):
            try:
                return await attempt(n)
            except AttemptFailed as failed:
                reasons.append(failed.reason)
                last = failed
                if n < self.attempts:
                    await self.sleep(self.delay(n))
        raise AmbientError(
            f"no usable answer after {self.attempts} attempts ({', '.join(reasons)}): {last}",
            hint="check the server's chat profile with `gigi llm profile list` and the "
            "provider's status; `gigi agent list --guild G` shows the failed runs",
            reasons=tuple(reasons),
        )
