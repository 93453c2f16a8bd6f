"""Usage per member over a window: the top spenders by tokens, most first, from the events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gigi_core import ConfigError, usage_by_actor
from gigi_core.llm.usage import UsageLog, UsageRecord


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
