"""Summaries: daily at 08:00 in the channel's time zone, weekly on Monday
08:00 from the dailies, and on-demand catch-me-up. Made from stored decisions, actions and
notes only (no message text exists); unique per (scope, granularity, period start), so a
job run twice writes one. Without a usable model a plain factual summary is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from gigi_knowledge import phrasing, tables, vectors
from gigi_knowledge.extract import models
from gigi_knowledge.service import now_ms
from gigi_knowledge.source_refs import iso
from gigi_knowledge.writer.extraction import new_id

log = logging.getLogger("gigi_knowledge")
D, A, S, SM, V = (
    tables.decisions,
    tables.actions,
    tables.signals,
    tables.summaries,
    tables.embeddings,
)
LIMIT = 40
HOUR = 8


@dataclass
class Material:
    decisions: list[Any]
    actions: list[Any]
    signals: list[Any]
    signal_counts: dict[str, int]
    dailies: list[Any]

    @property
    def empty(self) -> bool:
        return not (self.decisions or self.actions or self.signal_counts or self.dailies)

    def participants(self) -> list[str]:
        seen: set[str] = set()
        for d in self.decisions:
            seen |= set(d.decided_by or [])
        for a in self.actions:
            if a.owner_id:
                seen.add(a.owner_id)
        for s in self.signals:
            seen |= set(s.participants or [])
        return sorted(seen)[:50]

    def render(self) -> str:
        lines = ["Decisions:"]
        lines += [f"- {iso(d.decided_ms)[:10]} {d.summary}" for d in self.decisions] or ["- none"]
        lines.append("Actions:")
        lines += [
            f"- [{a.status}] {a.description} (owner {a.owner_id or a.owner_name or 'unknown'})"
            for a in self.actions
        ] or ["- none"]
        lines.append(
            "Notes: " + ", ".join(f"{n} {k}" for k, n in sorted(self.signal_counts.items()))
        )
        lines += [f"- {s.signal_type}: {s.summary}" for s in self.signals]
        if self.dailies:
            lines.append("Daily summaries:")
            lines += [f"- {iso(d.period_start_ms)[:10]}: {d.summary}" for d in self.dailies]
        return "\n".join(lines)

    def plain(self) -> str:
        """The factual summary written when no model answers (counts and recorded items)."""
        parts = []
        if self.decisions:
            parts.append(
                f"{len(self.decisions)} decision(s): "
                + "; ".join(d.summary for d in self.decisions[:5])
            )
        open_actions = [a for a in self.actions if a.status == "open"]
        if self.actions:
            parts.append(
                f"{len(self.actions)} action(s), {len(open_actions)} open"
                + (
                    ": " + "; ".join(a.description for a in open_actions[:5])
                    if open_actions
                    else ""
                )
            )
        if self.signal_counts:
            parts.append(
                "notes: " + ", ".join(f"{n} {k}" for k, n in sorted(self.signal_counts.items()))
            )
        if self.dailies and not parts:
            parts.append(f"{len(self.dailies)} daily summaries")
        return ". ".join(parts) + "." if parts else "Nothing was recorded."


async def gather(
    svc: Any, guild_id: str, channel_id: str, start: int, end: int, *, weekly: bool = False
) -> Material:
    async with svc.engine.connect() as conn:
        if weekly:
            dailies = (
                await conn.execute(
                    sa.select(SM)
                    .where(
                        SM.c.guild_id == guild_id,
                        SM.c.scope_type == "channel",
                        SM.c.scope_id == channel_id,
                        SM.c.granularity == "daily",
                        SM.c.period_start_ms >= start,
                        SM.c.period_start_ms < end,
                    )
                    .order_by(SM.c.period_start_ms)
                )
            ).all()
            return Material([], [], [], {}, list(dailies))
        decisions = (
            await conn.execute(
                sa.select(D)
                .where(
                    D.c.guild_id == guild_id,
                    D.c.channel_id == channel_id,
                    D.c.decided_ms >= start,
                    D.c.decided_ms < end,
                )
                .order_by(D.c.decided_ms.desc(), D.c.id)
                .limit(LIMIT)
            )
        ).all()
        actions = (
            await conn.execute(
                sa.select(A)
                .where(
                    A.c.guild_id == guild_id,
                    A.c.channel_id == channel_id,
                    A.c.created_ms >= start,
                    A.c.created_ms < end,
                )
                .order_by(A.c.created_ms.desc(), A.c.id)
                .limit(LIMIT)
            )
        ).all()
        in_period = sa.and_(
            S.c.guild_id == guild_id,
            S.c.channel_id == channel_id,
            S.c.occurred_ms >= start,
            S.c.occurred_ms < end,
        )
        counts = {
            r.signal_type: int(r.n)
            for r in await conn.execute(
                sa.select(S.c.signal_type, sa.func.count().label("n"))
                .where(in_period)
                .group_by(S.c.signal_type)
            )
        }
        signals = (
            await conn.execute(
                sa.select(S)
                .where(in_period, S.c.confidence >= svc.settings.extract_confidence_min)
                .order_by(S.c.occurred_ms.desc(), S.c.id)
                .limit(LIMIT)
            )
        ).all()
    return Material(list(decisions), list(actions), list(signals), counts, [])


async def compose(
    svc: Any, guild_id: str, channel_id: str, material: Material, granularity: str
) -> tuple[str, str | None, str | None]:
    """(summary, sentiment, model) from the model, or the plain summary when it fails."""
    try:
        reply, model = await models.summarise(
            svc.kernel, guild_id, channel_id, material.render(), granularity, svc.settings
        )
        return phrasing.calm(reply.summary), reply.sentiment, model
    except models.ModelFailed as exc:
        log.warning("knowledge: summarise failed (%s); plain summary written", exc.reason)
        return phrasing.calm(material.plain()), None, None


async def store(
    svc: Any,
    guild_id: str,
    channel_id: str,
    granularity: str,
    start: int,
    end: int,
    material: Material,
    text: str,
    sentiment: str | None,
    model: str | None,
    *,
    replace: bool = False,
) -> bool:
    """Insert (or, on demand, replace) the summary of a period; False if it existed."""
    sid = new_id()
    values = {
        "id": sid,
        "guild_id": guild_id,
        "scope_type": "channel",
        "scope_id": channel_id,
        "period_start_ms": start,
        "period_end_ms": end,
        "granularity": granularity,
        "summary": text[:4000],
        "key_decisions": [d.id for d in material.decisions[:20]],
        "key_actions": [a.id for a in material.actions[:20]],
        "active_topics": [],
        "participants": material.participants(),
        "sentiment": sentiment,
        "message_count": sum(material.signal_counts.values()) or None,
        "model_version": model,
        "generated_ms": now_ms(),
    }
    if svc.dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    keys = ["guild_id", "scope_type", "scope_id", "granularity", "period_start_ms"]
    stmt = insert(SM).values(**values)
    if replace:
        stmt = stmt.on_conflict_do_update(
            index_elements=keys,
            set_={k: v for k, v in values.items() if k not in keys and k != "id"},
        )
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=keys)
    emb = await vectors.embed(svc.kernel, guild_id, [text])
    async with svc.engine.begin() as conn:
        result = await conn.execute(stmt)
        if not result.rowcount:
            return False
        row = (
            await conn.execute(sa.select(SM.c.id).where(*(SM.c[k] == values[k] for k in keys)))
        ).first()
        await conn.execute(
            sa.delete(V).where(V.c.source_type == "summary", V.c.source_id == row.id)
        )
        if emb:
            m, (vec,) = emb
            await conn.execute(
                sa.insert(V).values(
                    **vectors.with_pg(
                        svc.dialect,
                        {
                            "id": new_id(),
                            "guild_id": guild_id,
                            "source_type": "summary",
                            "source_id": row.id,
                            "channel_id": channel_id,
                            "author_id": None,
                            "created_ms": end,
                            "topic_tags": [],
                            "entity_type": None,
                            "model": m,
                            "dims": int(vec.shape[0]),
                            "vector": vectors.encode(vec),
                        },
                    )
                )
            )
    return True


def _local_midnight(day: date, tz: ZoneInfo) -> int:
    return int(datetime.combine(day, time(0), tzinfo=tz).timestamp() * 1000)


def due_daily(now: datetime, tz: ZoneInfo) -> tuple[int, int]:
    """The local day whose daily is due: the day before the latest 08:00 that passed."""
    local = now.astimezone(tz)
    last_eight = local.date() if local.time() >= time(HOUR) else local.date() - timedelta(days=1)
    day = last_eight - timedelta(days=1)
    return _local_midnight(day, tz), _local_midnight(day + timedelta(days=1), tz)


def due_weekly(now: datetime, tz: ZoneInfo) -> tuple[int, int]:
    """The week (Monday to Monday, local) before the latest Monday 08:00 that passed."""
    local = now.astimezone(tz)
    monday = local.date() - timedelta(days=local.weekday())
    if local.weekday() == 0 and local.time() < time(HOUR):
        monday -= timedelta(days=7)
    return _local_midnight(monday - timedelta(days=7), tz), _local_midnight(monday, tz)


async def summary_job(
    ctx: Any, guild_id: str | None = None, channel_id: str | None = None, now: str | None = None
) -> dict[str, int]:
    """Hourly: every enabled channel whose daily (or weekly) is due and missing gets it."""
    from gigi_knowledge.service import ready

    svc = await ready(ctx.kernel)
    at = datetime.fromisoformat(now) if now else datetime.now(UTC)
    out = {"daily": 0, "weekly": 0, "skipped": 0}
    targets = [
        (g, c, info)
        for g, chans in svc.channels.items()
        for c, info in chans.items()
        if (guild_id is None or g == guild_id) and (channel_id is None or c == channel_id)
    ]
    if channel_id is not None and not targets:
        out["skipped"] = 1  # deleted or disabled since the job was queued: nothing to do
        return out
    for g, c, info in targets:
        tz = ZoneInfo(info.timezone)
        start, end = due_daily(at, tz)
        if not await _exists(svc, g, c, "daily", start):  # the usual case: already written
            material = await gather(svc, g, c, start, end)
            if not material.empty:
                text, sentiment, model = await compose(svc, g, c, material, "daily")
                out["daily"] += await store(
                    svc, g, c, "daily", start, end, material, text, sentiment, model
                )
        wstart, wend = due_weekly(at, tz)
        if await _exists(svc, g, c, "weekly", wstart):
            continue
        weekly = await gather(svc, g, c, wstart, wend, weekly=True)
        if not weekly.empty:
            text, sentiment, model = await compose(svc, g, c, weekly, "weekly")
            out["weekly"] += await store(
                svc, g, c, "weekly", wstart, wend, weekly, text, sentiment, model
            )
    return out


async def _exists(svc: Any, guild_id: str, channel_id: str, granularity: str, start: int) -> bool:
    async with svc.engine.connect() as conn:
        n = await conn.scalar(
            sa.select(sa.func.count())
            .select_from(SM)
            .where(
                SM.c.guild_id == guild_id,
                SM.c.scope_type == "channel",
                SM.c.scope_id == channel_id,
                SM.c.granularity == granularity,
                SM.c.period_start_ms == start,
            )
        )
    return bool(n)


async def _stored_last_seen(svc: Any, guild_id: str, channel_id: str, user_id: str) -> int | None:
    t = tables.last_seen
    async with svc.engine.connect() as conn:
        return await conn.scalar(  # type: ignore[no-any-return]
            sa.select(t.c.seen_ms).where(
                t.c.guild_id == guild_id, t.c.channel_id == channel_id, t.c.user_id == user_id
            )
        )


async def catchup(ctx: Any, since: str | None = None) -> dict[str, Any]:
    """On demand: since the asker's last message here (this process saw), else 24 h."""
    from gigi_core import ToolExecutionError
    from gigi_knowledge.search.timeparse import parse_since
    from gigi_knowledge.service import ready

    svc = await ready(ctx.kernel)
    await svc.notes.flush()  # what was extracted a moment ago counts
    if not ctx.channel_id:
        raise ToolExecutionError("ask in the channel you want to catch up on")
    end = now_ms()
    if since:
        start = int(parse_since(since, datetime.now(UTC)).timestamp() * 1000)
    else:
        seen = svc.last_seen.get((ctx.guild_id, ctx.channel_id, ctx.actor.id))
        if seen is None:  # not seen by this process (a restart): the stored time
            seen = await _stored_last_seen(svc, ctx.guild_id, ctx.channel_id, ctx.actor.id)
        default = end - svc.settings.catchup_hours * 3_600_000
        start = seen if seen and seen > default else default
    material = await gather(svc, ctx.guild_id, ctx.channel_id, start, end)
    if material.empty:
        return {
            "since": iso(start),
            "summary": phrasing.NOTHING_SINCE,
            "counts": {},
        }
    text, sentiment, model = await compose(svc, ctx.guild_id, ctx.channel_id, material, "on_demand")
    await store(
        svc,
        ctx.guild_id,
        ctx.channel_id,
        "on_demand",
        start,
        end,
        material,
        text,
        sentiment,
        model,
        replace=True,
    )
    return {
        "since": iso(start),
        "summary": text,
        "sentiment": sentiment,
        "counts": {
            "decisions": len(material.decisions),
            "actions": len(material.actions),
            "notes": sum(material.signal_counts.values()),
        },
        "decisions": [
            {"id": d.id, "summary": d.summary, "decided_at": iso(d.decided_ms)}
            for d in material.decisions[:10]
        ],
    }
