"""Issue 28 item 3: a server's redaction patterns never stall the shared event loop outside
ingest either — the embedding job redacts off the loop with the per-message budget (a row
over it is not embedded, and counted), and a query is cut before it is redacted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from gigi_memory.ingest import text
from gigi_memory.ingest.redactor import Redactor
from gigi_memory.ingest.text import RedactionRules, query_words
from gigi_memory.service import service_of
from memory_helpers import call, embed_all, enable, message, publish, rows, segments_of

SLOW = "a.*b|a"  # accepted by RE2; quadratic over its many matches: ~30 ms on 4,000 "a"s
QUERY_CHARS = 1000


async def _longest_gap(work: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """Run ``work`` while a heartbeat ticks every 2 ms: the longest the loop stood still."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0)  # the heartbeat takes its first time before the work starts
    try:
        result = await work()
    finally:
        stop.set()
        await beat
    return max(gaps, default=0.0), result


@pytest.fixture
async def slow_guild(kernel: Any) -> AsyncIterator[Any]:
    """Twenty 4,000-character messages stored before the slow pattern is added (so ingest
    stored them in full); the embedding job must apply it to each. One job ran before
    (its first run imports and loads the embedder: not what is measured)."""
    await enable(kernel)
    await publish(kernel, message("warming up"))
    await embed_all(kernel)
    await publish(kernel, *(message("a" * 4000) for _ in range(20)))
    await call(kernel, "policy", redact_add=SLOW)
    yield kernel


async def test_the_embedding_job_redacts_off_the_event_loop(slow_guild, monkeypatch) -> None:
    """~0.6 s of RE2 per batch on the loop before; now a worker thread does it."""
    monkeypatch.setenv("GIGI_MEMORY_REDACT_BUDGET_MS", "10000")
    gap, _ = await _longest_gap(lambda: embed_all(slow_guild))
    embedded = await rows(
        slow_guild, "SELECT count(*) AS n FROM memory_messages WHERE vector_model IS NOT NULL"
    )
    assert embedded[0].n == 21
    assert len(await segments_of(slow_guild)) > 20  # redacted and embedded, not skipped
    assert gap < 0.4, f"the loop stood still for {gap:.3f} s"


async def test_a_row_over_the_budget_is_not_embedded_and_is_counted(
    slow_guild, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_MEMORY_REDACT_BUDGET_MS", "5")  # 4,000 "a"s take ~30 ms
    await publish(slow_guild, message("the bird sings"))  # microseconds: within the budget
    await embed_all(slow_guild)  # the job finishes: over-budget rows are not claimed for ever
    found = await segments_of(slow_guild)
    texts = await rows(
        slow_guild,
        "SELECT message_id, vector_model FROM memory_messages ORDER BY id",
    )
    assert [r.message_id for r in texts if r.vector_model is None] == []  # checkpointed
    embedded = {r.message_id for r in found}
    assert embedded == {texts[0].message_id, texts[-1].message_id}  # within the budget
    status = (await call(slow_guild, "status"))["redaction"]
    assert status["not_embedded"] == 20
    assert status["withheld"] == 0  # still stored with their text; only vectors are missing
    assert "budget" in status["last_problem"]
    assert (await call(slow_guild, "status"))["vectors"]["messages_without_vectors"] == 0


async def test_a_refused_stored_pattern_stops_the_job_and_gives_the_batch_back(
    kernel, monkeypatch
) -> None:
    """Rules that cannot be applied embed nothing (not even unmasked) and hold no claim."""
    import sqlalchemy as sa
    from gigi_memory import tables
    from gigi_memory.embedding.vectors import embed_job

    await enable(kernel)
    await call(kernel, "policy", redact_add=r"x-\d+")  # the server's policy row exists
    await publish(kernel, message("my id:424242 canary"))
    async with kernel.db.engine.begin() as conn:
        await conn.execute(
            sa.update(tables.policies)
            .where(tables.policies.c.guild_id == "g1")
            .values(redaction='{"emails": true, "phones": true, "patterns": ["(?<=id:)\\\\d+"]}')
        )
    svc = service_of(kernel)
    assert await svc.cache.load(kernel.db.engine)

    class Ctx:
        cancelled = False
        key = "embed:g1"

        def __init__(self) -> None:
            self.kernel = kernel

        async def progress(self, *args: Any) -> None:
            pass

    with pytest.raises(Exception, match=r"\(\?<=id:\)"):
        await embed_job(Ctx(), "g1")
    assert not await segments_of(kernel)
    held = await rows(kernel, "SELECT embed_claim FROM memory_messages")
    assert [r.embed_claim for r in held] == [None]


async def test_queued_slices_get_their_whole_budget(monkeypatch) -> None:
    """Two callers share the worker thread: the second's wait counts from when the thread
    starts its texts, not from when it was queued behind the first's."""
    monkeypatch.setenv("GIGI_MEMORY_REDACT_BUDGET_MS", "200")
    redactor = Redactor()
    rules = RedactionRules(emails=False, phones=False, patterns=(SLOW,))
    try:
        first = asyncio.create_task(redactor.redact_many("g1", ["a" * 4000] * 30, rules))
        await asyncio.sleep(0)
        second = await redactor.redact_many("g2", ["a" * 4000], rules)
        assert all(t is not None for t in await first)
        assert second == ["[redacted]" * 4000]
        assert redactor.stats_for("g2")["withheld"] == 0
    finally:
        redactor.close()


def test_a_long_query_is_cut_before_it_is_redacted() -> None:
    rules = RedactionRules(emails=False, phones=False, patterns=(SLOW,))
    started = time.perf_counter()
    found = query_words("b" * 10 + " " + "a" * 20000, rules)
    assert time.perf_counter() - started < 0.05  # ~4 s uncut
    assert found == ["bbbbbbbbbb"]
    # The cut falls at a space, never inside a word (a token cut short would escape masking).
    assert getattr(text, "MAX_QUERY_CHARS", None) == QUERY_CHARS
    key = "sk-" + "x" * 40
    words = query_words("w " * (QUERY_CHARS // 2 - 5) + key)
    assert not any("x" in w for w in words)
    assert len(" ".join(words)) <= QUERY_CHARS


async def test_the_query_embedding_is_cut_before_it_is_redacted(kernel) -> None:
    """20,000 characters under the slow pattern: ~0.7 s on the loop uncut, ~2 ms cut."""
    await enable(kernel)
    await call(kernel, "policy", redact_add=SLOW)
    svc = service_of(kernel)
    await svc.vectors.query_vector("g1", "warming up")  # loads the embedder: not measured
    gap, got = await _longest_gap(lambda: svc.vectors.query_vector("g1", "a" * 20000))
    assert got.vector is not None
    assert gap < 0.3, f"the loop stood still for {gap:.3f} s"
