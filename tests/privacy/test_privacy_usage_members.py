"""The per-member usage rollups follow a member's deletion and a guild's purge as the usage
events do: the member's days and weeks merge into the pseudonym's, a purged guild's keep no
member, and each week stays the sum of its days. Each case folds part of the events first,
so folded and unfolded usage are both covered. Both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from gigi_core import fold_usage_by_actor, usage_by_actor
from gigi_core.llm.usage import UsageLog, UsageRecord
from gigi_core.store.agent_tables import AgentRun
from gigi_core.store.llm_tables import LlmUsageEvent
from gigi_core.store.usage_actor_fold import monday
from gigi_core.store.usage_actor_tables import LlmUsageActorDay, LlmUsageActorWeek
from tests.privacy.plugins import OTHER, USER

NOW = datetime.now(UTC)


def _call(actor: str, tokens: int, days_ago: int, guild: str, request: str = "") -> UsageRecord:
    return UsageRecord(
        request_id=request or f"r-{actor}-{tokens}-{days_ago}-{guild}", provider="openai",
        model="m", purpose="chat", billing_owner_type="guild", billing_owner_id=guild,
        status="ok", guild_id=guild, actor_id=actor, input_tokens=tokens, output_tokens=1,
        created_at=NOW - timedelta(days=days_ago, minutes=5),
    )  # fmt: skip


async def _seed(kernel: Any) -> None:
    """The member and a neighbour in g1 and g2 on three days, one of them in an earlier
    week (nine days ago); half folded, half not."""
    log = UsageLog(kernel.db)
    for guild in ("g1", "g2"):
        for days_ago in (0, 1, 9):
            await log.record(_call(USER, 100 + days_ago, days_ago, guild))
            await log.record(_call(OTHER, 10 + days_ago, days_ago, guild))
    await fold_usage_by_actor(kernel.db, settle_seconds=0)
    for guild in ("g1", "g2"):
        await log.record(_call(USER, 1000, 0, guild))


async def _from_events(kernel: Any, guild: str) -> list[tuple[str | None, int, int, int]]:
    """What the report must say: the events of the window grouped by member."""
    e = LlmUsageEvent
    first = NOW.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=29)
    query = (
        select(e.actor_id, func.count(), func.sum(e.input_tokens), func.sum(e.output_tokens))
        .where(e.guild_id == guild, e.created_at >= first)
        .group_by(e.actor_id)
    )
    async with kernel.db.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return sorted((a, int(c), int(i), int(o)) for a, c, i, o in rows)


async def _report(kernel: Any, guild: str) -> list[tuple[str | None, int, int, int]]:
    rows = await usage_by_actor(kernel.db, guild)
    return sorted((r.actor_id, r.calls, r.input_tokens, r.output_tokens) for r in rows)


async def _rollup_actors(kernel: Any, guild: str) -> set[str]:
    """The members in the guild's daily rollup, checked to be those of its weekly one,
    each week holding exactly the sum of its days."""
    async with kernel.db.engine.connect() as conn:
        days = (await conn.execute(select(LlmUsageActorDay.__table__))).all()
        weeks = (await conn.execute(select(LlmUsageActorWeek.__table__))).all()
    summed: dict[tuple[str, Any, str], list[int]] = {}
    for g, day, actor, *sums in days:
        entry = summed.setdefault((g, monday(day), actor), [0, 0, 0])
        for i, value in enumerate(sums):
            entry[i] += value
    assert {(g, w, a): list(v) for g, w, a, *v in weeks} == summed
    return {actor for g, _, actor, *_ in days if g == guild}


async def _agrees_before_and_after_folding(kernel: Any, guild: str) -> None:
    assert await _report(kernel, guild) == await _from_events(kernel, guild)
    await fold_usage_by_actor(kernel.db, settle_seconds=0)
    assert await _report(kernel, guild) == await _from_events(kernel, guild)
    await _rollup_actors(kernel, guild)  # the weeks still their days' sums


async def test_the_everywhere_delete_merges_the_member_into_the_pseudonym(kernel) -> None:
    await _seed(kernel)
    alias = kernel.privacy.pseudonym(USER)
    await kernel.privacy.delete(USER)
    for guild in ("g1", "g2"):
        assert await _rollup_actors(kernel, guild) == {alias, OTHER}
        assert await _report(kernel, guild) == sorted([(alias, 4, 1310, 4), (OTHER, 3, 40, 3)])
        await _agrees_before_and_after_folding(kernel, guild)
        assert USER not in await _rollup_actors(kernel, guild)


async def test_a_guild_scoped_delete_leaves_the_other_guild(kernel) -> None:
    await _seed(kernel)
    alias = kernel.privacy.pseudonym(USER)
    await kernel.privacy.delete(USER, "g1")
    assert await _rollup_actors(kernel, "g1") == {alias, OTHER}
    assert await _rollup_actors(kernel, "g2") == {USER, OTHER}
    for guild in ("g1", "g2"):
        await _agrees_before_and_after_folding(kernel, guild)
    assert (USER, 4, 1310, 4) in await _report(kernel, "g2")


async def test_a_guild_purge_keeps_its_days_without_members(kernel) -> None:
    await _seed(kernel)
    await kernel.privacy.purge_guild("g1")
    assert await _rollup_actors(kernel, "g1") == {""}
    assert await _report(kernel, "g1") == [(None, 7, 1350, 7)]
    await _agrees_before_and_after_folding(kernel, "g1")
    assert await _rollup_actors(kernel, "g2") == {USER, OTHER}


async def test_the_deleting_runs_own_usage_takes_the_pseudonym_once_it_ends(kernel) -> None:
    """``/gigi privacy delete`` keeps its own run; when it has finished, its usage moves."""
    log = UsageLog(kernel.db)
    await log.record(_call(USER, 40, 0, "g1", request="req-own-run"))
    await log.record(_call(USER, 2, 1, "g1"))
    await fold_usage_by_actor(kernel.db, settle_seconds=0)
    await log.record(_call(USER, 60, 0, "g1", request="req-own-run"))  # not folded yet
    async with kernel.db.session() as s:
        s.add(
            AgentRun(
                id="run-own", request_id="req-own-run", kind="slash", actor_id=USER,
                guild_id="g1", status="done",
            )
        )  # fmt: skip
    alias = kernel.privacy.pseudonym(USER)
    assert await kernel.privacy.forget_run("run-own") > 0
    assert await _report(kernel, "g1") == sorted([(USER, 1, 2, 1), (alias, 2, 100, 2)])
    assert await _rollup_actors(kernel, "g1") == {USER, alias}
    await _agrees_before_and_after_folding(kernel, "g1")
    assert await kernel.privacy.forget_run("run-own") == 0  # idempotent: nothing moves twice
    assert await _report(kernel, "g1") == sorted([(USER, 1, 2, 1), (alias, 2, 100, 2)])
