"""What a member's erasure does beyond the rows that hold their id: the copies in memory
(windows, queued jobs, pending notes) and the free text that names them.

Names are the member's own person entities (name and aliases, three characters or more),
matched as whole words, case-sensitive, so "Ana" is replaced and "banana" or "ana" are not.
Text a model wrote about them under another name is not found: that is documented.
"""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables

FORMER = "a former member"
MIN_NAME = 3
# (table, text columns): every free-text field the pipeline writes.
TEXT_FIELDS: tuple[tuple[sa.Table, tuple[str, ...]], ...] = (
    (tables.decisions, ("summary", "rationale")),
    (tables.actions, ("description", "owner_name")),
    (tables.signals, ("summary",)),
    (tables.summaries, ("summary",)),
    (tables.relationships, ("context",)),
)


async def forget_in_memory(svc: Any, user_id: str, guild_id: str | None) -> None:
    """Drop their window messages, queued jobs and pending notes, wait for the jobs running
    now (they read a window before), then write what is queued so the deletion sees it."""
    svc.windows.forget_author(user_id, guild_id)
    svc.queue.forget_author(user_id, guild_id)
    svc.notes.forget_member(user_id, guild_id)
    s = svc.settings
    await svc.queue.wait_running(s.classify_timeout_seconds + 2 * s.extract_timeout_seconds + 30)
    await svc.notes.flush()


def name_pattern(names: set[str]) -> re.Pattern[str] | None:
    kept = sorted({n.strip() for n in names if len(n.strip()) >= MIN_NAME}, key=len, reverse=True)
    if not kept:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in kept) + r")(?!\w)")


async def scrub_names(conn: Any, guild_id: str | None, names: set[str]) -> int:
    """Replace the member's names in every free-text field of the scope; returns rows changed."""
    pattern = name_pattern(names)
    if pattern is None:
        return 0
    changed = 0
    needles = [n for n in names if len(n.strip()) >= MIN_NAME]
    for table, columns in TEXT_FIELDS:
        cols = [table.c[c] for c in columns]
        scope = [] if guild_id is None else [table.c.guild_id == guild_id]
        like = sa.or_(*(col.like(f"%{n.strip()}%") for col in cols for n in needles))
        rows = (await conn.execute(sa.select(table.c.id, *cols).where(*scope, like))).all()
        for row in rows:
            values = {}
            for col in cols:
                text = getattr(row, col.name)
                if text and (new := pattern.sub(FORMER, text)) != text:
                    values[col.name] = new[: col.type.length] if col.type.length else new
            if values:
                await conn.execute(sa.update(table).where(table.c.id == row.id).values(**values))
                changed += 1
    return changed
