"""Commands that queue a long job (``/memory sync``) show its progress by editing their reply.

The convention every surface understands: a result holding ``{"job": {"id": ID, "follow":
true}}`` names a job the member wants to watch. Discord edits the reply with a progress bar
until the job ends, for at most the 15 minutes an interaction token lives.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

import discord

from gigi_core import GigiError
from gigi_core.jobs import JobInfo

log = logging.getLogger(__name__)

POLL_VAR = "GIGI_DISCORD_JOB_POLL_SECONDS"
TOKEN_LIFETIME = 14 * 60.0  # under Discord's 15-minute interaction token
BAR = 12


def poll_seconds() -> float:
    raw = os.environ.get(POLL_VAR, "3")
    try:
        value = float(raw)
    except ValueError:
        raise GigiError(f"{POLL_VAR} must be a number of seconds, not {raw!r}") from None
    return max(0.05, value)


def progress_line(info: JobInfo) -> str:
    """One line a member reads: a bar while running, then how it ended (never an error text)."""
    if info.status == "done":
        return "Done."
    if info.status == "cancelled":
        return "Cancelled."
    if info.status == "failed":
        return (
            f"Failed ({info.error_class or 'error'}). An operator can see it with "
            f"`gigi jobs show {info.id}` and retry it with `gigi jobs retry {info.id}`."
        )
    p = info.progress
    if info.status == "queued" and p is None:
        return "Queued…" if info.attempts == 0 else f"Waiting to retry (attempt {info.attempts})…"
    if p is None:
        return "Working…"
    note = f" — {p.note}" if p.note else ""
    if not p.total:
        return f"{p.done:,} so far{note}"
    filled = min(BAR, round(BAR * p.done / p.total))
    return f"`{'█' * filled}{'░' * (BAR - filled)}` {p.done:,} / {p.total:,}{note}"


async def follow(
    kernel: Any, message: discord.WebhookMessage, base: str, job_id: str, *, every: float
) -> None:
    """Edit ``message`` as the job moves; stops when it ends or the token would expire."""
    deadline = time.monotonic() + TOKEN_LIFETIME
    shown = None
    while True:
        info = await kernel.jobs.get(job_id)
        line = progress_line(info)
        ended = info.status in ("done", "failed", "cancelled")
        if not ended and time.monotonic() >= deadline:
            line += f" (still running: `gigi jobs show {job_id}`)"
        if line != shown:
            try:
                await message.edit(content=f"{base}\n{line}".strip())
            except discord.HTTPException as exc:  # the member dismissed it, or the token ended
                log.info("stopped following job %s: %s", job_id, type(exc).__name__)
                return
            shown = line
        if ended or time.monotonic() >= deadline:
            return
        await asyncio.sleep(every)
