"""Usage per member over a window: the top spenders by tokens, most first, from the events
(folded into per-member days and weeks, or not yet). Both backends."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, func, inspect, select

from gigi_core import ConfigError, fold_usage_by_actor, usage_by_actor
from gigi_core.llm.usage import UsageLog, UsageRecord, event_row, usage_write
from gigi_core.store.usage_actor_fold import monday
from gigi_core.store.usage_actor_tables import LlmUsageActorDay, LlmUsageActorWeek


def _call(actor: str | None, tokens: int, when: datetime, guild: str = "g1") -> UsageRecord:
    return UsageRecord(
        request_id=f"r-{actor}-{tokens}-{when.isoformat()}", provider="openai", model="m",
        purpose="chat", billing_owner_type="guild", billing_owner_id=guild, status="ok",
        guild_id=guild, actor_id=actor, input_tokens=tokens, output_tokens=1, created_at=when,
    )  # fmt: skip


async def test_top_members_by_tokens_in_the_window(kernel) -> None:
    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    await log.record(_call("u1", 10, now))
    await log.record(_call("u1", 10, now - timedelta(days=3)))
    await log.record(_call("u2", 50, now))
    await log.record(_call(None, 5, now))  # a plugin's own call: no member
    await log.record(_call("u3", 900, now - timedelta(days=40)))  # outside 30 days
    await log.record(_call("u4", 900, now, guild="g2"))  # another guild

    rows = await usage_by_actor(kernel.db, "g1", days=30)
    assert [(r.actor_id, r.calls, r.input_tokens, r.tokens) for r in rows] == [
        ("u2", 1, 50, 51),
        ("u1", 2, 20, 22),
        (None, 1, 5, 6),
    ]
    assert [r.actor_id for r in await usage_by_actor(kernel.db, "g1", days=60, limit=1)] == ["u3"]
    assert await usage_by_actor(kernel.db, "nobody") == []


async def test_bad_arguments_name_what_to_change(kernel) -> None:
    with pytest.raises(ConfigError, match="days"):
        await usage_by_actor(kernel.db, "g1", days=0)
    with pytest.raises(ConfigError, match="limit"):
        await usage_by_actor(kernel.db, "g1", limit=0)


async def _fold(kernel) -> int:
    return await fold_usage_by_actor(kernel.db, settle_seconds=0)


def _rows(rows: list) -> list[tuple]:
    return [(r.actor_id, r.calls, r.input_tokens, r.output_tokens) for r in rows]


async def test_same_answer_before_and_after_a_fold(kernel) -> None:
    """Folded days and the events after the watermark add up to what the events hold."""
    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    first = [
        _call("u1", 10, now),
        _call("u1", 20, now - timedelta(days=2)),
        _call(None, 5, now - timedelta(days=1)),
        _call("u2", 7, now - timedelta(days=29)),
        _call("u3", 900, now - timedelta(days=31)),  # before the window
        _call("u4", 900, now, guild="g2"),
    ]
    for record in first:
        await log.record(record)
    before = _rows(await usage_by_actor(kernel.db, "g1", days=30))
    assert before == [("u1", 2, 30, 2), ("u2", 1, 7, 1), (None, 1, 5, 1)]

    assert await _fold(kernel) == len(first)
    assert _rows(await usage_by_actor(kernel.db, "g1", days=30)) == before
    assert await _fold(kernel) == 0  # nothing new: nothing folded twice
    assert _rows(await usage_by_actor(kernel.db, "g1", days=30)) == before

    await log.record(_call("u2", 100, now))  # after the fold: read from the events
    after = [("u2", 2, 107, 2), ("u1", 2, 30, 2), (None, 1, 5, 1)]
    assert _rows(await usage_by_actor(kernel.db, "g1", days=30)) == after
    await _fold(kernel)
    assert _rows(await usage_by_actor(kernel.db, "g1", days=30)) == after
    assert _rows(await usage_by_actor(kernel.db, "g1", days=32, limit=1)) == [("u3", 1, 900, 1)]
    assert _rows(await usage_by_actor(kernel.db, "g2")) == [("u4", 1, 900, 1)]


async def test_fold_runs_in_batches_and_skips_events_still_settling(kernel) -> None:
    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    for i in range(5):
        await log.record(_call(f"u{i}", 10 + i, now - timedelta(hours=i + 1)))
    assert await fold_usage_by_actor(kernel.db, batch=2, max_batches=1, settle_seconds=0) == 2
    assert await fold_usage_by_actor(kernel.db, batch=2, settle_seconds=0) == 3
    await log.record(_call("u9", 1, now))
    # An event younger than the settling time may have company still committing: it waits.
    assert await fold_usage_by_actor(kernel.db, settle_seconds=600) == 0
    rows = _rows(await usage_by_actor(kernel.db, "g1", days=2, limit=10))
    assert [r[0] for r in rows] == ["u4", "u3", "u2", "u1", "u0", "u9"]
    assert sum(r[1] for r in rows) == 6


async def test_a_fold_that_fails_midway_counts_nothing_twice(kernel) -> None:
    """The watermark moves in the fold's own transaction: a failure before it rolls back."""
    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    await log.record(_call("u1", 10, now))
    await log.record(_call("u2", 20, now))
    expected = _rows(await usage_by_actor(kernel.db, "g1"))

    def fail_on_watermark(conn, cursor, statement, *args) -> None:
        if statement.startswith("UPDATE llm_usage_actor_watermark SET last_event_id=") and (
            "last_event_id=llm_usage_actor_watermark" not in statement.replace(" ", "")
        ):
            raise RuntimeError("the fold's process died here")

    engine = kernel.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", fail_on_watermark)
    try:
        with pytest.raises(RuntimeError):
            await _fold(kernel)
    finally:
        event.remove(engine, "before_cursor_execute", fail_on_watermark)
    assert _rows(await usage_by_actor(kernel.db, "g1")) == expected
    async with kernel.db.engine.connect() as conn:
        assert await conn.scalar(select(func.count()).select_from(LlmUsageActorDay)) == 0
    assert await _fold(kernel) == 2
    assert _rows(await usage_by_actor(kernel.db, "g1")) == expected


async def test_the_fold_is_a_scheduled_kernel_job(kernel) -> None:
    assert kernel.jobs.spec("gigi.usage_members_fold").schedule == "*/5 * * * *"
    log = UsageLog(kernel.db)
    await log.record(_call("u1", 10, datetime.now(UTC) - timedelta(hours=2)))
    expected = _rows(await usage_by_actor(kernel.db, "g1"))
    await kernel.jobs.defer("gigi.usage_members_fold", {})
    await kernel.jobs.run_until_idle()
    async with kernel.db.engine.connect() as conn:
        folded = (await conn.execute(select(LlmUsageActorDay.actor_id))).scalars().all()
    assert folded == ["u1"]
    assert _rows(await usage_by_actor(kernel.db, "g1")) == expected == [("u1", 1, 10, 1)]


async def test_far_behind_the_events_are_read_by_guild_and_time(kernel, monkeypatch) -> None:
    """Past FEW_UNFOLDED unfolded events (a store just upgraded) the other plan answers the
    same: the guild's events of the window from its index."""
    from gigi_core.store import usage_series

    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    await log.record(_call("u1", 10, now - timedelta(days=1)))
    await _fold(kernel)
    await log.record(_call("u1", 5, now))
    await log.record(_call("u2", 30, now))
    await log.record(_call("u2", 30, now, guild="g2"))
    await log.record(_call("u3", 30, now - timedelta(days=45)))
    expected = [("u2", 1, 30, 1), ("u1", 2, 15, 2)]
    assert _rows(await usage_by_actor(kernel.db, "g1")) == expected
    monkeypatch.setattr(usage_series, "FEW_UNFOLDED", 0)
    assert _rows(await usage_by_actor(kernel.db, "g1")) == expected


def _spread(seed: int, n: int, now: datetime) -> list[UsageRecord]:
    """``n`` calls of five members (and no member) over the last 100 days, two guilds."""
    rng = random.Random(seed)
    return [
        UsageRecord(
            request_id=f"s{seed}-{i}",
            provider="openai",
            model="m",
            purpose="chat",
            billing_owner_type="guild",
            billing_owner_id="g1",
            status="ok",
            guild_id=rng.choice(("g1", "g1", "g1", "g2")),
            actor_id=rng.choice(("u1", "u2", "u3", "u4", "u5", None)),
            input_tokens=rng.randrange(1, 500),
            output_tokens=rng.randrange(100),
            created_at=now - timedelta(seconds=rng.randrange(100 * 86400)),
        )
        for i in range(n)
    ]


def _by_actor(row: tuple) -> str:
    return row[0] or ""


def _straight_sum(records: list[UsageRecord], guild: str, days: int) -> list[tuple]:
    """What the report must say: the window's events grouped by member, in Python."""
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=days - 1)
    sums: dict[str | None, list[int]] = {}
    for r in records:
        if r.guild_id == guild and r.created_at >= first:
            entry = sums.setdefault(r.actor_id, [0, 0, 0])
            entry[0] += 1
            entry[1] += r.input_tokens or 0
            entry[2] += r.output_tokens or 0
    return sorted(((actor, *v) for actor, v in sums.items()), key=_by_actor)


async def _all_windows_agree(kernel, records: list[UsageRecord]) -> None:
    """Every window from 1 to 14 days starts on each weekday at least once: whole weeks
    from the weekly rollup and edge days from the daily one must add up either way."""
    for days in (*range(1, 15), 30, 60, 90, 100):
        for guild in ("g1", "g2"):
            rows = _rows(await usage_by_actor(kernel.db, guild, days=days, limit=1000))
            assert sorted(rows, key=_by_actor) == _straight_sum(records, guild, days), (guild, days)


async def _weeks_are_their_days(kernel) -> None:
    """Each weekly row holds exactly the sum of its member's days that week."""
    async with kernel.db.engine.connect() as conn:
        days = (await conn.execute(select(LlmUsageActorDay.__table__))).all()
        weeks = (await conn.execute(select(LlmUsageActorWeek.__table__))).all()
    summed: dict[tuple, list[int]] = {}
    for guild, day, actor, *sums in days:
        entry = summed.setdefault((guild, monday(day), actor), [0, 0, 0])
        for i, value in enumerate(sums):
            entry[i] += value
    assert {(g, w, a): list(v) for g, w, a, *v in weeks} == summed
    assert all(w.weekday() == 0 for _, w, *_ in weeks)


async def test_windows_of_7_30_90_days_equal_the_events_folded_or_not(kernel) -> None:
    """Folded in several batches, then more events the job has not folded yet (some of
    them old): each window's report is the straight sum of its events."""
    now = datetime.now(UTC)
    folded, unfolded = _spread(1, 400, now), _spread(2, 60, now)
    await kernel.db.writer.write(usage_write([event_row(r) for r in folded]))
    await _all_windows_agree(kernel, folded)  # nothing folded yet
    assert await fold_usage_by_actor(kernel.db, batch=150, settle_seconds=0) == len(folded)
    await _weeks_are_their_days(kernel)
    await _all_windows_agree(kernel, folded)
    await kernel.db.writer.write(usage_write([event_row(r) for r in unfolded]))
    await _all_windows_agree(kernel, folded + unfolded)
    await _fold(kernel)
    await _weeks_are_their_days(kernel)
    await _all_windows_agree(kernel, folded + unfolded)


async def test_an_upgraded_store_fills_its_weeks_from_the_folded_days(kernel) -> None:
    """kernel_0024 on a store whose days were folded before it: the weeks are summed from
    them once, and the reports stay the events' sums (downgrade drops the weeks)."""
    from alembic import command

    from gigi_core.store import migrate

    now = datetime.now(UTC)
    records = _spread(3, 300, now)
    await kernel.db.writer.write(usage_write([event_row(r) for r in records]))
    await _fold(kernel)

    def downgrade(sync_conn) -> None:
        cfg = migrate.alembic_config([])
        cfg.attributes["connection"] = sync_conn
        command.downgrade(cfg, "kernel_0023")

    async with kernel.db.engine.begin() as conn:
        await conn.run_sync(downgrade)
        assert "llm_usage_actor_weeks" not in await conn.run_sync(
            lambda c: inspect(c).get_table_names()
        )
    await migrate.upgrade(kernel.db, {})
    await _weeks_are_their_days(kernel)
    await _all_windows_agree(kernel, records)
    later = _spread(4, 50, now)
    await kernel.db.writer.write(usage_write([event_row(r) for r in later]))
    await _fold(kernel)
    await _weeks_are_their_days(kernel)
    await _all_windows_agree(kernel, records + later)


async def test_weeks_follow_the_days_whoever_writes_them(kernel) -> None:
    """The database keeps each week the sum of its days (kernel_0024's triggers), so a
    process of the previous version, which folds and erases members in the daily table
    only, leaves no week behind: rows added, added to, renamed, shrunk and deleted."""
    d = LlmUsageActorDay.__table__
    monday_ = monday(datetime.now(UTC).date()) - timedelta(days=14)
    days = [monday_ + timedelta(days=n) for n in (0, 3, 6, 7)]  # two weeks

    def row(day, actor: str, calls: int) -> dict:
        return {"guild_id": "g1", "day": day, "actor_id": actor, "calls": calls,
                "input_tokens": 10 * calls, "output_tokens": calls}  # fmt: skip

    async with kernel.db.engine.begin() as conn:
        await conn.execute(d.insert(), [row(day, "u1", 2) for day in days])
        await conn.execute(d.insert(), [row(days[0], "u2", 5)])
    await _weeks_are_their_days(kernel)
    async with kernel.db.engine.begin() as conn:  # a later fold adds to a day
        key = (d.c.guild_id == "g1") & (d.c.day == days[1]) & (d.c.actor_id == "u1")
        await conn.execute(d.update().where(key).values(calls=d.c.calls + 3))
    await _weeks_are_their_days(kernel)
    async with kernel.db.engine.begin() as conn:  # erasure by rename, and by delete
        await conn.execute(d.update().where(d.c.actor_id == "u2").values(actor_id="anon-1"))
        await conn.execute(d.delete().where(d.c.actor_id == "u1", d.c.day == days[3]))
    await _weeks_are_their_days(kernel)
    async with kernel.db.engine.connect() as conn:
        w = LlmUsageActorWeek.__table__
        members = set((await conn.execute(select(w.c.actor_id, w.c.week))).all())
    assert members == {("u1", days[0]), ("anon-1", days[0])}  # u1's second week is gone
    assert sum(r.calls for r in await usage_by_actor(kernel.db, "g1", days=60)) == 2 * 3 + 3 + 5
