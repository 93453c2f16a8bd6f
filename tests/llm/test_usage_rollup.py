"""The usage rollup gives the same reports as summing every event, on both backends."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, insert, select

from gigi_core.llm.usage import UsageRecord, event_row, usage_write
from gigi_core.store import migrate
from gigi_core.store.llm_tables import LlmUsageEvent, LlmUsageRollup
from tests.llm.service_helpers import llm_kernel

NOW = datetime.now(UTC).replace(microsecond=0)


def _events(seed: int, count: int) -> list[UsageRecord]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        tokens = rng.choice([None, 0, rng.randrange(1, 5000)])
        out.append(
            UsageRecord(
                request_id=f"r{n}",
                provider=rng.choice(["openai", "anthropic"]),
                model=rng.choice(["m-a", "m-b", "M-c"]),
                purpose=rng.choice(["chat", "embedding"]),
                billing_owner_type="guild",
                billing_owner_id="g1",
                status=rng.choice(["ok", "ok", "error"]),
                guild_id=rng.choice(["g1", "g1", "g2", None]),
                input_tokens=tokens,
                output_tokens=rng.choice([None, rng.randrange(0, 900)]),
                reasoning_tokens=rng.choice([None, 7]),
                cached_tokens=rng.choice([None, 0, 11]),
                # Spread over ten days, with some exactly on midnight.
                created_at=(
                    NOW.replace(hour=0, minute=0, second=0) - timedelta(days=rng.randrange(10))
                    if n % 17 == 0
                    else NOW - timedelta(minutes=rng.randrange(10 * 24 * 60))
                ),
            )
        )
    return out


def _windows() -> list[datetime | None]:
    midnight = NOW.replace(hour=0, minute=0, second=0)
    return [
        None,
        NOW - timedelta(days=3),
        NOW - timedelta(hours=5, minutes=7),
        midnight - timedelta(days=2),  # exactly a day boundary: no partial day
        NOW.replace(minute=0, second=0) - timedelta(hours=30),  # an hour boundary
        midnight.replace(tzinfo=None) - timedelta(days=1),  # a naive time counts as UTC
        NOW + timedelta(days=1),  # nothing yet
        NOW - timedelta(days=30),
    ]


async def _same_reports(kernel) -> None:
    log = kernel.llm.usage_log
    for guild in ("g1", "g2", "g9"):
        for since in _windows():
            fast = await kernel.llm.usage(guild, since)
            assert fast == await log.summary_from_events(guild, since), (guild, since)


async def test_reports_match_the_event_scan(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        log = kernel.llm.usage_log
        for record in _events(1, 300):
            await log.record(record)
        rows = await kernel.llm.usage("g1")
        assert sum(r.calls for r in rows) > 100
        await _same_reports(kernel)
        # Events written together in one transaction are summed together.
        batch = [replace(r, request_id=f"b{n}") for n, r in enumerate(_events(2, 50))]
        await kernel.db.writer.write(usage_write([event_row(r) for r in batch]))
        await _same_reports(kernel)
        async with kernel.db.session() as s:
            keys = await s.scalar(
                select(func.count())
                .select_from(LlmUsageRollup)
                .where(LlmUsageRollup.period == "day")
            )
            events = await s.scalar(select(func.count()).select_from(LlmUsageEvent))
        assert events == 350 and keys < events  # one row per day and key


async def test_the_migration_back_fills_existing_events(database_url, tmp_path) -> None:
    from alembic import command

    async with llm_kernel(tmp_path, database_url) as kernel:
        rows = [event_row(r) for r in _events(3, 400)]
        async with kernel.db.engine.begin() as conn:  # as stored before kernel_0007
            await conn.execute(insert(LlmUsageEvent.__table__), rows)
            await conn.execute(delete(LlmUsageRollup.__table__))
        assert await kernel.llm.usage("g1") == []

        cfg = migrate.alembic_config([])

        def redo(sync_conn) -> None:
            cfg.attributes["connection"] = sync_conn
            command.downgrade(cfg, "kernel_0006")
            command.upgrade(cfg, "heads")

        async with kernel.db.engine.begin() as conn:
            await conn.run_sync(redo)
        assert sum(r.calls for r in await kernel.llm.usage("g1")) > 100
        await _same_reports(kernel)
