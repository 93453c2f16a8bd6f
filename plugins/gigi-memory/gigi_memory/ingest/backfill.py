"""``/memory sync``: remember a channel's past messages, paged from the surface's history.

The command queues the job ``memory.sync`` (one per channel at a time) and returns its id for
the surface to follow. The job pages ``kernel.history`` newest first, 100 messages a page
(the surface keeps Discord's rate limits), runs every message through the same gate as live
ingestion (bots, retention, paused and secure periods; anything before the channel was enabled is
allowed: that is what a backfill is for), skips ids already stored, and after each page
writes its cursor and counts to ``memory_backfills``, so a restart resumes where it stopped
and inserts nothing twice. A message deleted or edited after its page was read is not
brought back by it (``tombstones``). A channel turned off, paused or secured mid-way stops it;
Gigi losing Read Message History fails it at once (``HistoryForbidden``), by class only.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import sqlalchemy as sa

from gigi_core import Hint, ToolExecutionError
from gigi_core.events import HistoryForbidden, MessageCreated
from gigi_memory import tables
from gigi_memory.ingest import importer
from gigi_memory.ingest.observe import create_op, millis
from gigi_memory.policy import DAY_MS, now_ms
from gigi_memory.privacy import tombstones
from gigi_memory.privacy.erasures import Erased
from gigi_memory.privacy.withheld_spans import WithheldSpans

JOB = "memory.sync"
PAGE = 100
ACTIVE = ("queued", "running")
# ``queue`` writes the channel's record just after deferring: a worker that is quick (another
# process, PostgreSQL's notify) can start the job first and waits this long for its record.
RECORD_WAIT_SECONDS = 10.0
# ``memory_backfills.error`` holds 64 characters: the class and the fix fit in 61.
FORBIDDEN_FIX = "needs View Channel and Read Message History"
b = tables.backfills


async def start(ctx: Any, channel: str, days: int | None = None) -> dict[str, Any]:
    """The command: check the channel may be synced here, queue the job, name it to follow."""
    from gigi_memory.service import service_of

    svc = service_of(ctx.kernel)
    if not svc.cache.loaded:
        await svc.start()
    await _check(ctx.kernel, svc, ctx.guild_id, channel)
    # A surface here that serves the guild but keeps no history (the console) can never run
    # the job; where no surface serves it (the web dashboard) it is queued for the bot's
    # process, as `gigi memory sync` does.
    kernel = ctx.kernel
    if kernel.outbox.serves(ctx.guild_id) and not kernel.history.serves(ctx.guild_id):
        raise ToolExecutionError(
            "Gigi cannot read this server's message history from here (the surface here keeps "
            "none, e.g. the console): run /memory sync on Discord, or "
            "`gigi memory sync` while the bot runs"
        )
    return await queue(ctx.kernel, ctx.guild_id, channel, days, by=ctx.actor.id)


async def queue(
    kernel: Any, guild: str, channel: str, days: int | None, *, by: str | None
) -> dict[str, Any]:
    """Queue (or find) the channel's sync job; it runs where a surface serves the guild."""
    from gigi_memory.service import service_of

    svc = service_of(kernel)
    if not svc.cache.loaded:
        await svc.start()
    await _check(kernel, svc, guild, channel)
    async with svc.engine.connect() as conn:
        row = (
            await conn.execute(sa.select(b).where(b.c.guild_id == guild, b.c.channel_id == channel))
        ).first()
    if row is not None and row.status in ACTIVE:
        info = await kernel.jobs.get(row.job_id)
        if info.status in ACTIVE:
            return _started(channel, row.job_id, already=True)
    since = now_ms() - days * DAY_MS if days else None
    job_id = await kernel.jobs.defer(
        JOB, {"guild_id": guild, "channel_id": channel}, key=f"{guild}:{channel}"
    )
    now = now_ms()
    values = {
        "guild_id": guild,
        "channel_id": channel,
        "job_id": job_id,
        "status": "queued",
        "cursor": None,
        "since_ms": since,
        "pages": 0,
        "seen": 0,
        "imported": 0,
        "skipped": 0,
        "error": None,
        "started_by": by,
        "started_ms": now,
        "updated_ms": now,
    }
    async with svc.engine.begin() as conn:
        await conn.execute(tables.upsert_for(svc.dialect, b, ["guild_id", "channel_id"], values))
    return _started(channel, job_id)


def _started(channel: str, job_id: str, *, already: bool = False) -> dict[str, Any]:
    head = "A sync of" if already else "Syncing"
    tail = " is already running." if already else ": the messages Gigi may remember are added."
    return {"message": f"{head} <#{channel}>{tail}", "job": {"id": job_id, "follow": True}}


async def _check(kernel: Any, svc: Any, guild: str, channel: str) -> None:
    """Raise, with the fix in the sentence, when this channel may not be synced now."""
    if not svc.cache.guild(guild).enabled:
        raise ToolExecutionError(
            "memory is turned off in this server",
            hint=Hint(
                "/memory policy enabled:true turns it on",
                console="/memory policy enabled=true turns it on",
                shell=f"gigi memory policy --guild {guild} --enabled turns it on",
            ),
        )
    mode = svc.cache.channel(guild, channel)
    if mode is None or mode.mode != "on" or not svc.cache.retention_of(guild, mode):
        raise ToolExecutionError(
            Hint(
                f"<#{channel}> is not remembered",
                shell=f"channel {channel} is not remembered",
                console=f"channel {channel} is not remembered",
            ),
            hint=Hint(
                f"/memory enable channel:<#{channel}> first",
                console=f"/memory enable channel={channel} first",
                shell=f"gigi memory enable --guild {guild} --channel {channel} first",
            ),
        )
    state = await kernel.channels.get(guild, channel)
    if state != "active":
        raise ToolExecutionError(
            Hint(
                f"<#{channel}> is {state}",
                shell=f"channel {channel} is {state}",
                console=f"channel {channel} is {state}",
            ),
            hint=Hint(
                "/gigi channel resume it first",
                console=f"/gigi channel resume channel={channel} first",
                shell=f"gigi channel resume --guild {guild} --channel {channel} first",
            ),
        )


async def run(ctx: Any, guild_id: str, channel_id: str) -> None:
    """The job: page, gate, insert, checkpoint; resumable from the stored cursor."""
    from gigi_memory.service import service_of

    kernel = ctx.kernel
    svc = service_of(kernel)
    if not svc.cache.loaded:
        await svc.start()
    where = (b.c.guild_id == guild_id) & (b.c.channel_id == channel_id)
    row = await _own_record(kernel, svc, where, ctx.job_id)
    if row is None:
        return  # a newer sync of this channel replaced this one, or it was purged
    cursor, since = row.cursor, row.since_ms
    counts = {
        "pages": row.pages,
        "seen": row.seen,
        "imported": row.imported,
        "skipped": row.skipped,
    }
    await _save(svc, where, status="running")
    while True:
        if not await _still_ours(svc, where, ctx.job_id):
            return  # purged mid-way (its record went with the channel), or a newer sync
        if ctx.cancelled:
            await _save(svc, where, status="stopped", error="cancelled")
            return
        try:
            await _check(kernel, svc, guild_id, channel_id)
        except ToolExecutionError:
            await _save(svc, where, status="stopped", error="policy changed")
            return
        read_ms = now_ms()  # the page's texts are current as of this (tombstones)
        try:
            page = await kernel.history.page(guild_id, channel_id, before=cursor, limit=PAGE)
        except Exception as exc:
            retried = getattr(exc, "retry_job", True)
            await _save(svc, where, status="queued" if retried else "failed", error=_why(exc))
            raise
        added, skipped, older = await _ingest(
            kernel, svc, guild_id, channel_id, page, since, read_ms
        )
        counts["pages"] += 1
        counts["seen"] += len(page.messages)
        counts["imported"] += added
        counts["skipped"] += skipped
        cursor = page.before
        done = cursor is None or older
        await _save(svc, where, cursor=cursor, status="done" if done else "running", **counts)
        await ctx.progress(counts["seen"], None, f"{counts['imported']} remembered")
        if done:
            return


async def _ingest(
    kernel: Any, svc: Any, guild: str, channel: str, page: Any, since: int | None, read_ms: int
) -> tuple[int, int, bool]:
    """(inserted, skipped, reached ``since``) for one page of ``MessageCreated``."""
    messages: list[MessageCreated] = list(page.messages)
    parents = {m.parent_channel_id for m in messages if m.parent_channel_id}
    withheld = await WithheldSpans(kernel, guild).load(channel, *sorted(parents))
    known = await importer._existing(svc, guild, [m.message_id for m in messages])
    erased = await Erased.load(kernel, svc, guild)
    copy_ms = tombstones.copy_time_of_page(read_ms)
    async with svc.engine.connect() as conn:  # the writer checks again, after what is queued
        marks = await tombstones.load(conn, guild, [m.message_id for m in messages])
    queued: list[str] = []
    skipped, older = 0, False
    for m in messages:
        created = millis(m.created_at)
        if since is not None and created < since:
            older = True
            continue
        gate = svc.cache.gate(
            guild_id=guild,
            channel_id=m.channel_id,
            parent_id=m.parent_channel_id,
            kind=m.channel_kind,
            is_bot=m.author_is_bot or m.author_is_webhook,
            created_ms=created,
            live=False,
        )
        if (
            m.author_is_self
            or m.message_id in known
            or not gate.ingest
            or withheld.reason(created, m.channel_id, m.parent_channel_id, channel) is not None
            or erased.before(m.author_id, created)  # the author asked to be forgotten
            or tombstones.blocks(marks.get(m.message_id), copy_ms) is not None
        ):
            skipped += 1
            continue
        op = create_op(m, gate)
        op.data["copy_ms"] = copy_ms
        svc.writer.enqueue(op)
        queued.append(m.message_id)
    await svc.writer.flush()
    written = len(await importer._existing(svc, guild, queued)) if queued else 0
    return written, skipped + len(queued) - written, older


async def _own_record(kernel: Any, svc: Any, where: Any, job_id: str) -> Any:
    """The channel's record once it names this job; None when another live sync holds it or
    it never comes (``queue`` died between deferring and writing it)."""
    deadline = time.monotonic() + RECORD_WAIT_SECONDS
    while True:
        async with svc.engine.connect() as conn:
            row = (await conn.execute(sa.select(b).where(where))).first()
        if row is not None and row.job_id == job_id:
            return row
        if row is not None and await _live(kernel, row.job_id):
            return None  # replaced: that sync runs, this one has nothing to do
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(0.05)


async def _live(kernel: Any, job_id: str) -> bool:
    from gigi_core.jobs import JobNotFound

    try:
        return (await kernel.jobs.get(job_id)).status in ACTIVE
    except JobNotFound:  # done long ago and pruned
        return False


def _why(exc: Exception) -> str:
    """What ``/memory status`` shows for a failed page: the class, and for a lost permission
    the fix, in Gigi's own words (never the exception's text: the surface wrote it)."""
    if isinstance(exc, HistoryForbidden):
        return f"{HistoryForbidden.__name__}: {FORBIDDEN_FIX}"
    return type(exc).__name__


async def _still_ours(svc: Any, where: Any, job_id: str) -> bool:
    async with svc.engine.connect() as conn:
        return await conn.scalar(sa.select(b.c.job_id).where(where)) == job_id


async def _save(svc: Any, where: Any, **values: Any) -> None:
    async with svc.engine.begin() as conn:
        await conn.execute(sa.update(b).where(where).values(updated_ms=now_ms(), **values))


async def status(svc: Any, guild: str) -> list[dict[str, Any]]:
    """Every channel's last sync, for ``/memory status``."""
    async with svc.engine.connect() as conn:
        rows = (await conn.execute(sa.select(b).where(b.c.guild_id == guild))).all()
    return [
        {
            "channel_id": r.channel_id,
            "status": r.status,
            "pages": r.pages,
            "seen": r.seen,
            "imported": r.imported,
            "skipped": r.skipped,
            "error": r.error,
            "job_id": r.job_id,
        }
        for r in rows
    ]
