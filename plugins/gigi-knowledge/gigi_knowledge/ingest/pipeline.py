"""One message through the tiers: classify, then (high signal) extract with
the window as context, write, embed, and check new decisions for contradictions.

Never raises for a model's sake: a classification or extraction that times out, fails,
refuses or answers off-schema writes the fallback ``discussion`` signal at 0.3. Logs carry
counts and error classes only, never text.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables
from gigi_knowledge.extract import complexity, models
from gigi_knowledge.ingest.queue import Job
from gigi_knowledge.service import KnowledgeService, now_ms
from gigi_knowledge.writer.extraction import Context, guild_lock, new_id, write_extraction
from gigi_knowledge.writer.signals import note_row, write_signal

log = logging.getLogger("gigi_knowledge")
LIGHT = {"question": "question", "blocker": "blocker", "update": "update"}
FALLBACK_NOTE = "A discussion took place here; its details could not be extracted."
DAY_MS = 86_400_000
KNOWN_SECONDS = 30.0


def context_window(snapshot: Any, focus: Any) -> tuple[Any, ...]:
    """The messages before ``focus`` still in the window, then ``focus`` itself."""
    before = []
    for m in snapshot:
        if m.message_id == focus.message_id:
            break
        if m.created_ms <= focus.created_ms:
            before.append(m)
    return (*before, focus)


def _context(svc: KnowledgeService, job: Job, window: Any, model: str | None) -> Context:
    s = svc.settings
    return Context(
        job.guild_id,
        job.channel_id,
        window,
        model,
        now_ms(),
        s.extract_confidence_min,
        s.entity_dedup_threshold,
        s.staleness_days,
        job.message_id,
    )


async def process(svc: KnowledgeService, job: Job) -> None:
    focus = job.payload
    info = svc.channel(job.guild_id, job.channel_id)
    if focus is None or info is None:  # deleted, secured or disabled since it was queued
        return
    window = context_window(svc.windows.snapshot(job.guild_id, job.channel_id), focus)
    s = svc.settings
    try:
        cls, model = await models.classify(
            svc.kernel, job.guild_id, job.channel_id, window, job.message_id, s
        )
    except models.ModelFailed as exc:
        await _fallback(svc, job, window, focus, exc)
        return
    if not cls.is_high_signal:
        kinds = [c for c in cls.categories if c != "routine"]
        if not kinds:
            return  # "thanks", "lol": nothing durable
        ctx = _context(svc, job, window, model)
        kind = next((LIGHT[c] for c in kinds if c in LIGHT), "discussion")
        note = light_note(ctx, kind, [e for e in cls.entities if len(e) <= 60])
        if note is not None:
            svc.notes.add(note_row(ctx, kind, note, cls.confidence, focus))
        return
    known = await _known_entities(svc, job.guild_id)
    score = complexity.score(window, cls.categories, cls.entities, cls.confidence, s.window_size)
    escalate = score > s.complexity_threshold
    if escalate:
        svc.escalations += 1
    try:
        extraction, model = await models.extract(
            svc.kernel,
            job.guild_id,
            job.channel_id,
            window,
            job.message_id,
            info.context,
            known,
            s,
            escalate=escalate,
        )
    except models.ModelFailed as exc:
        await _fallback(svc, job, window, focus, exc)
        return
    ctx = _context(svc, job, window, model)
    written = await write_extraction(svc, ctx, extraction)
    if written.entities_new:
        svc.known.pop(job.guild_id, None)
    if written.dropped:
        log.info("knowledge: %d extracted item(s) not stored (checks)", written.dropped)
    for decision in written.decision_vectors:
        try:
            await check_contradictions(svc, job.guild_id, job.channel_id, decision)
        except Exception as exc:
            log.warning("knowledge: contradiction check failed: %s", type(exc).__name__)


def light_note(ctx: Context, kind: str, names: list[str]) -> str | None:
    """Tier 1's note naming at most three entities, under the same guard as every row: a
    name joins only if the whole note still copies no message (three short names can
    rebuild a sentence); None when even the bare note would copy one."""

    def text(about: list[str]) -> str:
        return f"A {kind} came up" + (f" about {', '.join(about)}." if about else ".")

    about: list[str] = []
    for name in ctx.clean(names, 60):
        if len(about) == 3:
            break
        if not ctx.guard.copies(text([*about, name])):
            about.append(name)
    note = text(about)
    return None if ctx.guard.copies(note) else note


async def _fallback(
    svc: KnowledgeService, job: Job, window: Any, focus: Any, exc: models.ModelFailed
) -> None:
    svc.fallbacks += 1
    log.warning("knowledge: %s failed (%s); fallback signal written", exc.slot, exc.reason)
    ctx = _context(svc, job, window, None)
    await write_signal(
        svc,
        ctx,
        signal_type="discussion",
        summary=FALLBACK_NOTE,
        confidence=svc.settings.fallback_confidence,
        messages=[focus],
    )


async def _known_entities(svc: KnowledgeService, guild_id: str) -> list[str]:
    """The guild's 50 most mentioned entity names, cached for a short while (a prompt hint)."""
    cached = svc.known.get(guild_id)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    e = tables.entities
    async with svc.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(e.c.name)
            .where(e.c.guild_id == guild_id, e.c.deleted.is_(False))
            .order_by(e.c.mention_count.desc())
            .limit(50)
        )
        names = [r.name for r in rows]
    svc.known[guild_id] = (time.monotonic() + KNOWN_SECONDS, names)
    return names


async def check_contradictions(
    svc: KnowledgeService, guild_id: str, channel_id: str, me: Any
) -> int:
    """Similar active decisions of the channel within 90 days (cosine ≥ the
    threshold) go to the classify model; a yes is recorded for the contradiction job.
    ``me`` is the new decision (``caches.KnownDecision``)."""
    c = tables.contradictions
    s = svc.settings
    since = me.decided_ms - s.contradiction_days * DAY_MS
    if not svc.caches.has_decisions(guild_id, channel_id):
        await svc.notes.flush()  # decisions still queued are read back with the rest
    async with svc.engine.connect() as conn:
        known = await svc.caches.channel_decisions(conn, guild_id, channel_id, since)
    scored = sorted(
        (
            (float(me.vec @ d.vec), d)
            for d in known
            if d.id != me.id and d.model == me.model and d.vec.shape == me.vec.shape
        ),
        key=lambda p: -p[0],
    )
    found = 0
    for score, row in scored[:5]:
        if score < s.contradiction_threshold:
            break
        try:
            yes = await models.contradicts(
                svc.kernel, guild_id, channel_id, row.summary, me.summary, s
            )
        except models.ModelFailed:
            continue
        if not yes:
            continue
        earlier, later = (row.id, me.id)
        if row.decided_ms > me.decided_ms:
            earlier, later = later, earlier
        await svc.notes.flush()  # both decisions are stored before the pair is
        async with guild_lock(svc, guild_id), svc.engine.begin() as conn:
            exists = await conn.scalar(
                sa.select(sa.func.count())
                .select_from(c)
                .where(c.c.earlier_id == earlier, c.c.later_id == later)
            )
            if not exists:
                t = now_ms()
                await conn.execute(
                    sa.insert(c).values(
                        id=new_id(),
                        guild_id=guild_id,
                        channel_id=channel_id,
                        earlier_id=earlier,
                        later_id=later,
                        similarity=round(score, 4),
                        status="open",
                        posted_message_id=None,
                        created_ms=t,
                        updated_ms=t,
                    )
                )
                found += 1
    return found
