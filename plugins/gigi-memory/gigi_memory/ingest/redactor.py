"""Redaction off the loop: built-in masks where the caller runs, a server's own on a thread.

The built-in patterns are linear and cost at most ~1 ms on a 4,000-character message, so
they run where the writer runs. A server's patterns are RE2: no backtracking, but a
pattern such as ``a.*b|a`` still costs the square of the message length over its many
matches (~40 ms on 4,000 characters), and each server may have twenty. They run on one
worker thread (RE2 releases the GIL while it matches), each message with a budget of
``budget_seconds()`` of that thread's CPU time; a caller waits for its slice at most twice
the sum of its budgets, counted from when the thread starts it (not while it is queued
behind another caller's), and for the message the thread is on then to finish (RE2 cannot
be interrupted; it is judged by its own CPU time); the messages after it are not reached.
At ingest (the writer's ``redact_many``), a message over its budget or not reached, or
whose rules cannot be applied at all (a stored pattern RE2 refuses), is kept as metadata
only: its row, author, time and mentions are stored, its text, search words and embedding
are not. The embedding job (``redact_to_embed``, on a thread of its own) embeds
no message over the budget and stops on rules that cannot be applied. Never the unmasked
text, never a silent drop: each such message is counted per server and the reason shown
by ``/memory status``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gigi_memory.ingest.redaction import (
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
    not_embedded: int = 0  # the embedding job's re-redaction ran over the budget
    last_problem: str | None = None  # names the pattern or the budget, never message text
    last_at_ms: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "withheld": self.over_budget + self.failed,
            "over_budget": self.over_budget,
            "failed": self.failed,
            "not_embedded": self.not_embedded,
            "last_problem": self.last_problem,
            "last_at_ms": self.last_at_ms,
        }


@dataclass
class _Slice:
    """Work handed to the thread; ``done`` fills as it goes, ``stop`` ends it early."""

    texts: list[str]
    patterns: tuple[str, ...]
    budget: float
    began: float | None = None  # time.monotonic() when the thread started it
    done: list[tuple[str | None, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def _run_slice(work: _Slice) -> None:
    """On the worker thread: each text masked and timed (CPU time of this thread)."""
    work.began = time.monotonic()
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
        try:
            out, over, later, slowest = await self._mask(texts, rules)
        except RedactionError as exc:
            self._withhold(guild_id, len(texts), "failed", str(exc))
            return [None] * len(texts)
        except Exception as exc:  # never the unmasked text, never a silent drop
            self._withhold(
                guild_id, len(texts), "failed", f"redaction failed ({type(exc).__name__})"
            )
            return [None] * len(texts)
        if over or later:  # not reached in time: kept without text as well
            n = len(over) + len(later)
            self._withhold(guild_id, n, "over_budget", _over(n, slowest, ""))
        return out

    async def redact_to_embed(
        self, guild_id: str, texts: list[str], rules: RedactionRules
    ) -> tuple[list[str | None], list[int]]:
        """The embedding job's texts masked by the current rules, None where one ran over
        the budget (that message gets no vectors, and is counted) or was not reached in time
        behind slow ones (the indices returned second: to try again in another batch).
        Raises ``RedactionError`` when the rules cannot be applied: nothing is embedded."""
        out, over, later, slowest = await self._mask(texts, rules)
        if over:
            problem = _over(len(over), slowest, " to embed (searchable by their words only)")
            self._withhold(guild_id, len(over), "not_embedded", problem)
        return out, later

    async def _mask(
        self, texts: list[str], rules: RedactionRules
    ) -> tuple[list[str | None], list[int], list[int], float]:
        """(masked texts, None where not masked; the indices over the budget; those the
        thread did not reach in time; the slowest, seconds). Raises ``RedactionError``
        (rules that cannot be applied) or the thread's error."""
        out: list[str | None] = [mask_builtin(normalise(t), rules)[0] for t in texts]
        if not rules.patterns:
            return out, [], [], 0.0
        custom_pattern(rules.patterns)  # compiled (and cached) once, here
        todo = [i for i, t in enumerate(out) if t]
        if not todo:
            return out, [], [], 0.0
        budget = budget_seconds()
        work = _Slice([out[i] or "" for i in todo], rules.patterns, budget)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="gigi-memory-redact")
        future = asyncio.wrap_future(self._pool.submit(_run_slice, work))
        try:
            await _wait(future, work, 2 * budget * len(todo))
        finally:
            work.stop.set()  # the message on the thread finishes (RE2 is linear); no more
        await asyncio.shield(future)  # judged by its own CPU time: each slice gets one verdict
        done = list(work.done)
        over: list[int] = []
        for (masked, _), i in zip(done, todo, strict=False):
            out[i] = masked
            if masked is None:
                over.append(i)
        later = todo[len(done) :]
        for i in later:
            out[i] = None
        return out, over, later, max((used for _, used in done), default=0.0)

    def _withhold(self, guild_id: str, n: int, kind: str, problem: str) -> None:
        stats = self.stats.setdefault(guild_id, RedactionStats())
        setattr(stats, kind, getattr(stats, kind) + n)
        stats.last_problem = problem
        stats.last_at_ms = int(time.time() * 1000)
        if kind == "not_embedded":
            after, what = stats.not_embedded, "not embedded"
        else:
            after, what = stats.over_budget + stats.failed, "kept without text"
        before = after - n
        if before == 0 or before // 1000 != after // 1000:  # the first, then every thousand
            log.warning("memory: guild %s: %d message(s) %s: %s", guild_id, after, what, problem)


def _over(n: int, slowest: float, what: str) -> str:
    """The over-budget problem /memory status shows: the budget and timings, never text."""
    return (
        f"the server's patterns took longer than the {budget_seconds() * 1000:g} ms budget "
        f"on {n} message(s){what} (slowest {slowest * 1000:.1f} ms)"
    )


async def _wait(future: asyncio.Future[None], work: _Slice, allowed: float) -> None:
    """Until the slice is done, or ``allowed`` seconds after the thread began it: time spent
    queued behind another caller's slice (each ends by its own deadline) is not this one's."""
    while not future.done():
        began = work.began
        left = allowed if began is None else began + allowed - time.monotonic()
        if left <= 0:
            return  # the thread stops after its current message; the rest are not reached
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(left):
                await asyncio.shield(future)
    future.result()  # the thread's own error, if it raised
