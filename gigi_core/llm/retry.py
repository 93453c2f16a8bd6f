"""The one retry policy: which failures are retried, how long to wait, when to give up.

Pure functions and a small dataclass (no httpx) so the rules are testable on their own.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gigi_core.llm.errors import RETRYABLE_STATUSES


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts, backoff and the cap above which a provider's wait hint fails fast.

    ``max_attempts`` counts the first try: 4 means one call and up to three retries.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_backoff: float = 8.0
    max_retry_wait: float = 60.0
    jitter: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter after failed attempt ``attempt`` (1-based)."""
        ceiling = min(self.max_backoff, self.base_delay * (2 ** max(attempt - 1, 0)))
        return ceiling * (0.5 + 0.5 * self.jitter())

    def delay(self, attempt: int, hint: float | None) -> float | None:
        """Seconds to wait before the next attempt, or None when the hint exceeds the cap.

        A hint that is not a finite number of seconds, 0 or more, is ignored (backoff):
        ``asyncio.sleep(nan)`` would wedge the event loop's timers.
        """
        if not _usable(hint):
            return self.backoff(attempt)
        assert hint is not None
        if hint > self.max_retry_wait:
            return None
        return hint


def _usable(seconds: float | None) -> bool:
    return seconds is not None and math.isfinite(seconds) and seconds >= 0


def is_retryable_status(status: int) -> bool:
    """408, 409, 429, 500, 502, 503, 504 and 529 are worth another try."""
    return status in RETRYABLE_STATUSES


def retry_hint(
    headers: Mapping[str, str],
    body_delay: float | None = None,
    *,
    now: Callable[[], float] = time.time,
) -> float | None:
    """The provider's requested wait in seconds: retry-after-ms, retry-after, then RetryInfo.

    Non-finite (``nan``, ``inf``) and negative hints are rejected (None: back off instead).
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        seconds = _seconds(ms)
        if seconds is not None:
            return seconds / 1000.0
    after = lowered.get("retry-after")
    if after is not None:
        parsed = parse_retry_after(after, now=now)
        if parsed is not None:
            return parsed
    return body_delay if _usable(body_delay) else None


def _seconds(value: str) -> float | None:
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if _usable(number) else None


def parse_retry_after(value: str, *, now: Callable[[], float] = time.time) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date (RFC 9110)."""
    value = value.strip()
    try:
        float(value)
    except ValueError:
        pass
    else:
        return _seconds(value)
    from email.utils import parsedate_to_datetime  # only needed for the rare date form

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - now(), 0.0)
