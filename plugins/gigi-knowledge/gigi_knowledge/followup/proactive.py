"""The staleness nudge and the contradiction note, as scheduled jobs.

Staleness (twice daily): open actions past their deadline or ``staleness_at`` with no status
check in 24 h get one nudge, a question with buttons that update the action; a status
update re-arms it. Contradictions: a recorded yes on two decisions both older than 30
minutes gets one note with buttons to supersede or dismiss. Neither is posted in a paused or
secure channel (the kernel's observation state), nor in a thread whose parent channel is:
it waits there until the channel is resumed.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables
from gigi_knowledge.followup import notify
from gigi_knowledge.phrasing import approximately, bare, clause
from gigi_knowledge.service import now_ms, ready

log = logging.getLogger("gigi_knowledge")
A, D, C = tables.actions, tables.decisions, tables.contradictions
DAY_MS = 86_400_000
BATCH = 50


def _ago(ms: int, now: int) -> str:
    days = max(0, (now - ms) // DAY_MS)
    return "today" if days == 0 else ("yesterday" if days == 1 else f"{days} days ago")


class _States:
    """The guilds' non-active channels, read once per job run (``kernel.channels.states``).
    A thread is observed only while its parent channel is too (the kernel's rule)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._by_guild: dict[str, dict[str, str]] = {}

    async def active(self, guild_id: str, channel_id: str, parent_id: str | None) -> bool:
        if guild_id not in self._by_guild:
            self._by_guild[guild_id] = await self.kernel.channels.states(guild_id)
        quiet = self._by_guild[guild_id]
        return channel_id not in quiet and (parent_id is None or parent_id not in quiet)


def nudge_text(row: Any, now: int) -> str:
    """The staleness question, in the manner of ``phrasing`` (model text calmed)."""
    who = f"<@{row.owner_id}>" if row.owner_id else bare(row.owner_name or "") or "Someone"
    due = row.deadline_ms or row.staleness_ms
    when = datetime.fromtimestamp(due / 1000, UTC).date().isoformat()
    return (
        f"If I may, {who} undertook to {clause(row.description)} by {when}. That was "
        f"{_ago(due, now)} and I have noted no subsequent update. Shall I mark it as still "
        "in progress, or has it been done or cancelled?"
    )


def contradiction_text(later: str, earlier: str, earlier_ms: int, now: int) -> str:
    """The contradiction note, "One notes that this appears to differ from ...", model text calmed."""
    return (
        f"One notes that a decision recorded here ({clause(later)}) appears to differ from "
        f"an earlier one of {approximately(earlier_ms, now)} ({clause(earlier)}). Shall I "
        "mark the earlier one superseded?"
    )


async def staleness_job(ctx: Any) -> dict[str, int]:
    svc = await ready(ctx.kernel)
    now = now_ms()
    states = _States(ctx.kernel)
    stale = (
        A.c.status == "open",
        A.c.nudged_ms.is_(None),
        sa.or_(A.c.deadline_ms < now, A.c.staleness_ms < now),
        sa.or_(A.c.last_status_check_ms.is_(None), A.c.last_status_check_ms < now - DAY_MS),
    )
    # Per guild, only enabled and active channels are read, so actions waiting in a paused
    # channel never fill the batch ahead of those that can be nudged.
    targets: dict[str, list[str]] = {}
    skipped = 0  # enabled channels paused or secure now: their actions wait, unmarked
    for guild, chans in list(svc.channels.items()):
        here = [c for c, info in chans.items() if await states.active(guild, c, info.parent)]
        skipped += len(chans) - len(here)
        if here:
            targets[guild] = sorted(here)
    rows: list[Any] = []
    async with svc.engine.connect() as conn:
        for guild, here in targets.items():
            query = (
                sa.select(A)
                .where(A.c.guild_id == guild, A.c.channel_id.in_(here), *stale)
                .order_by(sa.func.coalesce(A.c.deadline_ms, A.c.staleness_ms), A.c.id)
                .limit(BATCH)
            )
            rows += (await conn.execute(query)).all()
    sent = 0
    for row in rows:
        # Claimed before posting: jobs are at-least-once, and a worker killed after Discord
        # took the post must not have the re-run post it again (a kill between the claim and
        # the post loses that nudge instead: once at most). Another worker's claim skips it.
        async with svc.engine.begin() as conn:
            claim = sa.update(A).where(A.c.id == row.id, A.c.nudged_ms.is_(None))
            if not (await conn.execute(claim.values(nudged_ms=now))).rowcount:
                continue
        args = {"id": row.id}
        message_id = await notify.post(
            ctx.kernel,
            row.guild_id,
            row.channel_id,
            nudge_text(row, now),
            (
                ("Done", "knowledge action update", args | {"status": "done"}, "success"),
                (
                    "Still in progress",
                    "knowledge action update",
                    args | {"status": "in_progress"},
                    "secondary",
                ),
                ("Cancelled", "knowledge action update", args | {"status": "cancelled"}, "danger"),
            ),
        )
        sent += message_id is not None  # one nudge: posted (or forbidden) either way
    return {"nudged": sent, "skipped": skipped, "checked": len(rows)}  # skipped: channels


async def contradiction_job(ctx: Any) -> dict[str, int]:
    svc = await ready(ctx.kernel)
    s = svc.settings
    now = now_ms()
    quiet = now - s.contradiction_quiet_minutes * 60_000
    d1, d2 = D.alias("d1"), D.alias("d2")
    query = (
        sa.select(
            C,
            d1.c.summary.label("earlier"),
            d2.c.summary.label("later"),
            d1.c.decided_ms.label("earlier_ms"),
            d2.c.decided_ms.label("later_ms"),
        )
        .join(d1, d1.c.id == C.c.earlier_id)
        .join(d2, d2.c.id == C.c.later_id)
        .where(
            C.c.status == "open",
            d1.c.created_ms < quiet,
            d2.c.created_ms < quiet,
            d1.c.status == "active",
            d2.c.status == "active",
        )
        .order_by(C.c.created_ms, C.c.id)
        .limit(BATCH)
    )
    async with svc.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    posted = 0
    states = _States(ctx.kernel)
    for row in rows:
        info = svc.channel(row.guild_id, row.channel_id)
        if info is None:
            continue
        if not await states.active(row.guild_id, row.channel_id, info.parent):  # until resumed
            continue
        text = contradiction_text(row.later, row.earlier, row.earlier_ms, now)
        async with svc.engine.begin() as conn:  # claimed first, as staleness nudges are
            claim = sa.update(C).where(C.c.id == row.id, C.c.status == "open")
            if not (await conn.execute(claim.values(status="posted", updated_ms=now))).rowcount:
                continue
        args = {"id": row.id}
        message_id = await notify.post(
            ctx.kernel,
            row.guild_id,
            row.channel_id,
            text,
            (
                ("Supersede the earlier", "knowledge decision supersede", args, "primary"),
                ("Dismiss", "knowledge decision dismiss", args, "secondary"),
            ),
        )
        if message_id is not None:
            async with svc.engine.begin() as conn:
                await conn.execute(
                    sa.update(C).where(C.c.id == row.id).values(posted_message_id=message_id)
                )
        posted += message_id is not None
    return {"posted": posted, "checked": len(rows)}
