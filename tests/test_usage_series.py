"""Usage per day from the daily rollup: split by model or purpose, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gigi_core import ConfigError, usage_by_day
from gigi_core.llm.usage import UsageLog, UsageRecord


def _call(model: str, purpose: str, when: datetime, guild: str = "g1") -> UsageRecord:
    return UsageRecord(
        request_id=f"r-{model}-{when.isoformat()}",
        provider="openai",
        model=model,
        purpose=purpose,
        billing_owner_type="guild",
        billing_owner_id=guild,
        status="ok",
        guild_id=guild,
        input_tokens=10,
        output_tokens=3,
        created_at=when,
    )


async def test_days_split_by_model_and_purpose(kernel) -> None:
    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    await log.record(_call("m-a", "chat", now))
    await log.record(_call("m-a", "chat", now))
    await log.record(_call("m-b", "embedding", now - timedelta(days=2)))
    await log.record(_call("m-b", "chat", now - timedelta(days=40)))  # outside 30 days
    await log.record(_call("m-a", "chat", now, guild="g2"))  # another guild

    points = await usage_by_day(kernel.db, "g1", days=30)
    assert [(p.day, p.key, p.calls, p.input_tokens) for p in points] == [
        ((now - timedelta(days=2)).date(), "m-b", 1, 10),
        (now.date(), "m-a", 2, 20),
    ]
    by_purpose = await usage_by_day(kernel.db, "g1", days=60, split_by="purpose")
    assert {(p.key, p.calls) for p in by_purpose} == {("chat", 1), ("embedding", 1), ("chat", 2)}
    assert await usage_by_day(kernel.db, "nobody") == []


async def test_bad_arguments_name_what_to_change(kernel) -> None:
    with pytest.raises(ConfigError, match="days"):
        await usage_by_day(kernel.db, "g1", days=0)
    with pytest.raises(ConfigError, match="split"):
        await usage_by_day(kernel.db, "g1", split_by="colour")  # type: ignore[arg-type]
