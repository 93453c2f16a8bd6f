"""Ingest's redaction: built-in masks on the loop, a server's own patterns on a worker thread.

The built-in patterns are linear and cost at most ~1 ms on a 4,000-character message, so
they run where the writer runs. A server's patterns are RE2: no backtracking, but a
pattern such as ``a.*b|a`` still costs the square of the message length over its many
matches (~40 ms on 4,000 characters), and each server may have twenty. They run on one
worker thread (RE2 releases the GIL while it matches), each message with a budget of
``budget_seconds()`` of that thread's CPU time; the writer waits for a slice at most twice
the sum of its budgets. A message over its budget, or whose rules cannot be applied at
all (a stored pattern RE2 refuses), is kept as metadata only: its row, author, time and
mentions are stored, its text, search words and embedding are not. Never the unmasked
text, never a silent drop: each such message is counted per server and the reason shown
by ``/memory status``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gigi_memory.redaction import (
    RedactionError,
    RedactionRules,
    custom_pattern,
    mask_builtin,
    mask_custom,
    normalise,
)

log = logging.getLogger("gigi_memory")

DEFAULT_BUDGET_MS = 20.0  # a 4,000-character message under twenty ordinary patterns: < 1 ms


def budget_seconds() -> float:
    """The CPU time one message's own patterns may take (``GIGI_MEMORY_REDACT_BUDGET_MS``)."""
    raw = os.environ.get("GIGI_MEMORY_REDACT_BUDGET_MS", "")
    try:
        value = float(raw) if raw else DEFAULT_BUDGET_MS
    except ValueError:
        value = DEFAULT_BUDGET_MS
    return (value if value > 0 else DEFAULT_BUDGET_MS) / 1000


@dataclass
class RedactionStats:
    """One server's messages kept without text because redaction could not finish."""

    over_budget: int = 0  # a server pattern took longer than the budget
    failed: int = 0  # the rules could not be applied (a refused pattern)
    last_problem: str | None = None  # names the pattern or the budget, never message text
    last_at_ms: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "withheld": self.over_budget + self.failed,
            "over_budget": self.over_budget,
            "failed": self.failed,
            "last_problem": self.last_problem,
            "last_at_ms": self.last_at_ms,
        }


@dataclass
class _Slice:
    """Work handed to the thread; ``done`` fills as it goes, ``stop`` ends it early."""

    texts: list[str]
    patterns: tuple[str, ...]
    budget: float
    done: list[tuple[str | None, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def _run_slice(work: _Slice) -> None:
    """On the worker thread: each text masked and timed (CPU time of this thread)."""
    for text in work.texts:
        if work.stop.is_set():
            return
        started = time.thread_time()
        masked, _ = mask_custom(text, work.patterns)
        used = time.thread_time() - started
        work.done.append((masked if used <= work.budget else None, used))


@dataclass
class Redactor:
    stats: dict[str, RedactionStats] = field(default_factory=dict)
    _pool: ThreadPoolExecutor | None = None

    def stats_for(self, guild_id: str) -> dict[str, Any]:
        return (self.stats.get(guild_id) or RedactionStats()).as_dict()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    async def redact_each(
        self, items: list[tuple[Any, dict[str, Any], str, RedactionRules]]
    ) -> list[str | None]:
        """The writer's (op, fields, storage, rules): each text masked, one ``redact_many``
        per guild's rules; metadata-only items are not redacted and stay None."""
        out: list[str | None] = [None] * len(items)
        groups: dict[tuple[str, RedactionRules], list[tuple[int, str]]] = {}
        for i, (op, data, storage, rules) in enumerate(items):
            if storage != "metadata_only":
                key = (op.guild_id or "", rules)
                groups.setdefault(key, []).append((i, data.get("text") or ""))
        for (guild, rules), todo in groups.items():
            done = await self.redact_many(guild, [text for _, text in todo], rules)
            for (i, _), text in zip(todo, done, strict=True):
                out[i] = text
        return out

    async def redact_many(
        self, guild_id: str, texts: list[str], rules: RedactionRules
    ) -> list[str | None]:
        """Each text normalised and masked; None where it must be kept without text."""
        out: list[str | None] = [mask_builtin(normalise(t), rules)[0] for t in texts]
        if not rules.patterns:
            return out
        try:
            custom_pattern(rules.patterns)  # compiled (and cached) once, here
        except RedactionError as exc:
            self._withhold(guild_id, len(texts), "failed", str(exc))
            return [None] * len(texts)
        todo = [i for i, t in enumerate(out) if t]
        if not todo:
            return out
        budget = budget_seconds()
        work = _Slice([out[i] or "" for i in todo], rules.patterns, budget)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="gigi-memory-redact")
        future = asyncio.wrap_future(self._pool.submit(_run_slice, work))
        try:
            async with asyncio.timeout(2 * budget * len(todo)):
                await asyncio.shield(future)
        except TimeoutError:
            pass  # what the thread has not finished is kept without text
        except Exception as exc:  # never the unmasked text, never a silent drop
            self._withhold(
                guild_id, len(todo), "failed", f"redaction failed ({type(exc).__name__})"
            )
            for i in todo:
                out[i] = None
            return out
        finally:
            work.stop.set()  # the message on the thread finishes (RE2 is linear); no more
        done = list(work.done)
        over = 0
        for k, i in enumerate(todo):
            masked = done[k][0] if k < len(done) else None
            out[i] = masked
            over += masked is None
        if over:
            slowest = max((used for _, used in done), default=0.0)
            self._withhold(
                guild_id,
                over,
                "over_budget",
                f"the server's patterns took longer than the {budget * 1000:g} ms budget "
                f"on {over} message(s) (slowest {slowest * 1000:.1f} ms)",
            )
        return out

    def _withhold(self, guild_id: str, n: int, kind: str, problem: str) -> None:
        stats = self.stats.setdefault(guild_id, RedactionStats())
        before = stats.over_budget + stats.failed
        if kind == "failed":
            stats.failed += n
        else:
            stats.over_budget += n
        stats.last_problem = problem
        stats.last_at_ms = int(time.time() * 1000)
        after = stats.over_budget + stats.failed
        if before == 0 or before // 1000 != after // 1000:  # the first, then every thousand
            log.warning(
                "memory: guild %s: %d message(s) kept without text: %s", guild_id, after, problem
            )
