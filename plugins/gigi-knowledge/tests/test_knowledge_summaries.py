"""Step 4: daily and weekly summaries at 08:00 channel time (unique per period, also across
a clock change), catch-me-up since the member's last message, the plain fallback, and a
summary job for a channel that was deleted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from gigi_knowledge.followup.summaries import due_daily, due_weekly
from knowledge_fakes import classify, decision, extraction, signal
from knowledge_helpers import ALICE, JobCtx, call, enable, message, publish, rows

from gigi_core.events import ChannelDeleted

LONDON = ZoneInfo("Europe/London")


def _reply(**items: Any) -> Any:
    def build(request: Any) -> Any:
        mid = request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]
        return extraction(
            **{k: [v | {"message_ids": [mid]} for v in vs] for k, vs in items.items()}
        )

    return build


async def _job(kernel: Any, **payload: Any) -> Any:
    return await kernel.registry.jobs["knowledge.summaries"].fn(JobCtx(kernel), **payload)


async def _seed_day(kernel: Any, model: Any, when: datetime) -> None:
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(
            decisions=[decision("Cache layer is dropped", [])],
            signals=[signal("Latency was discussed", [])],
        ),
    )
    await publish(kernel, message("x", created_at=when))
    # Rows are dated by the message: move the decision and signal into that day.
    async with kernel.db.engine.begin() as conn:
        ms = int(when.timestamp() * 1000)
        await conn.execute(
            sa.text("UPDATE knowledge_decisions SET decided_ms = :ms, created_ms = :ms"), {"ms": ms}
        )
        await conn.execute(sa.text("UPDATE knowledge_signals SET occurred_ms = :ms"), {"ms": ms})


def test_due_periods_follow_the_local_clock_across_dst() -> None:
    # Clocks go forward in London on 2026-03-29 at 01:00 UTC: that local day has 23 hours.
    before_eight = datetime(2026, 3, 30, 6, 59, tzinfo=UTC)  # 07:59 BST
    after_eight = datetime(2026, 3, 30, 7, 1, tzinfo=UTC)  # 08:01 BST
    s1, e1 = due_daily(before_eight, LONDON)
    s2, e2 = due_daily(after_eight, LONDON)
    assert datetime.fromtimestamp(s1 / 1000, LONDON).date().isoformat() == "2026-03-28"
    assert datetime.fromtimestamp(s2 / 1000, LONDON).date().isoformat() == "2026-03-29"
    assert (e2 - s2) == 23 * 3_600_000 and (e1 - s1) == 24 * 3_600_000
    ws, we = due_weekly(datetime(2026, 3, 30, 7, 1, tzinfo=UTC), LONDON)  # a Monday, 08:01 BST
    assert datetime.fromtimestamp(ws / 1000, LONDON).date().isoformat() == "2026-03-23"
    assert we - ws == 7 * 86_400_000 - 3_600_000


async def test_a_daily_is_written_once_across_hourly_runs_and_a_clock_change(
    kernel: Any, model: Any
) -> None:
    await enable(kernel, timezone="Europe/London")
    await _seed_day(kernel, model, datetime(2026, 3, 29, 12, 0, tzinfo=UTC))
    model.always(
        "summarise", {"summary": "The team dropped the cache layer.", "sentiment": "productive"}
    )
    at = datetime(2026, 3, 29, 23, 0, tzinfo=UTC)
    written = 0
    while at < datetime(2026, 3, 31, 12, 0, tzinfo=UTC):  # hourly, and twice at some hours
        for _ in range(2):
            written += (await _job(kernel, now=at.isoformat()))["daily"]
        at += timedelta(minutes=30)
    assert written == 1
    (s,) = await rows(kernel, "knowledge_summaries", "granularity = 'daily'")
    start = datetime.fromtimestamp(s.period_start_ms / 1000, LONDON)
    assert (
        start.isoformat() == "2026-03-29T00:00:00+00:00"
        and s.period_end_ms - s.period_start_ms == 23 * 3_600_000
    )
    assert s.summary == "The team dropped the cache layer." and s.sentiment == "productive"
    # Monday 30 March 08:00 BST passed too: one weekly from that daily, also written once.
    assert len(await rows(kernel, "knowledge_summaries", "granularity = 'weekly'")) == 1
    assert len(model.calls("summarise")) == 2
    # The first summarise call got the stored items only, no message text.
    prompt = model.calls("summarise")[0].messages[-1].content
    assert "Cache layer is dropped" in prompt and "Latency was discussed" in prompt


async def test_the_weekly_is_made_from_the_dailies(kernel: Any, model: Any) -> None:
    await enable(kernel)
    await _seed_day(kernel, model, datetime(2026, 11, 24, 12, 0, tzinfo=UTC))  # a Tuesday
    model.always("summarise", {"summary": "Cache dropped.", "sentiment": "routine"})
    await _job(kernel, now="2026-11-25T09:00:00+00:00")  # the Tuesday daily
    model.always("summarise", {"summary": "A week of cache work.", "sentiment": "routine"})
    out = await _job(kernel, now="2026-11-30T08:30:00+00:00")  # Monday 08:30 UTC
    assert out["weekly"] == 1
    (w,) = await rows(kernel, "knowledge_summaries", "granularity = 'weekly'")
    assert w.summary == "A week of cache work."
    assert "Cache dropped." in model.calls("summarise")[-1].messages[-1].content
    assert (await _job(kernel, now="2026-11-30T09:30:00+00:00"))["weekly"] == 0


async def test_without_a_model_a_plain_summary_is_written(kernel: Any, model: Any) -> None:
    await enable(kernel)
    await _seed_day(kernel, model, datetime(2026, 11, 24, 12, 0, tzinfo=UTC))
    model.always("summarise", "not json")
    await _job(kernel, now="2026-11-25T09:00:00+00:00")
    (s,) = await rows(kernel, "knowledge_summaries")
    assert s.summary.startswith("1 decision(s): Cache layer is dropped") and s.model_version is None


async def test_a_summary_job_for_a_deleted_channel(kernel: Any, model: Any) -> None:
    await enable(kernel)
    await _seed_day(kernel, model, datetime(2026, 11, 24, 12, 0, tzinfo=UTC))
    await publish(kernel, ChannelDeleted(guild_id="g1", channel_id="c1"))
    out = await _job(kernel, channel_id="c1", now="2026-11-25T09:00:00+00:00")
    assert out == {"daily": 0, "weekly": 0, "skipped": 1}
    assert await rows(kernel, "knowledge_summaries") == []
    kernel.gigi_knowledge.loaded = False  # a restart reads the store: still deleted
    await kernel.gigi_knowledge.reload()
    assert kernel.gigi_knowledge.channel("g1", "c1") is None


async def test_catchup_since_the_members_last_message(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(decisions=[decision("Old choice about fonts", [])]),
        _reply(decisions=[decision("New choice about colours", [])]),
    )
    model.always(
        "summarise",
        lambda r: {
            "summary": "Since you left: "
            + ("colours" if "colours" in r.messages[-1].content else "?")
            + ("" if "fonts" not in r.messages[-1].content else " and fonts"),
            "sentiment": "routine",
        },
    )
    await publish(kernel, message("fonts", author_id="u2"))
    await publish(kernel, message("i'm off", author_id="u1"))
    await publish(kernel, message("colours", author_id="u2"))
    out = await call(kernel, "catchup", actor=ALICE)
    assert out["summary"] == "Since you left: colours"
    assert out["counts"]["decisions"] == 1
    everything = await call(kernel, "catchup", actor=ALICE, since="24h")
    assert everything["summary"] == "Since you left: colours and fonts"
    assert len(await rows(kernel, "knowledge_summaries", "granularity = 'on_demand'")) == 2
    empty = await call(kernel, "catchup", actor=ALICE, channel_id="c5")
    assert empty["summary"].startswith("I'm afraid I have no record")
