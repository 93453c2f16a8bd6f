"""Marks for deletes and edits of messages memory has not stored (yet): no resurrection.

A ``/memory sync`` page is read from Discord, then written: a delete or an edit arriving in
between finds no row to change, and the page would bring back the old text. So the writer
leaves a mark (ids and times, never text) for a delete or edit of a message it does not hold
in a remembered channel, and every copy from history (a sync page, an import) is checked
against the marks in the writer's own transaction, after the delete or edit, before insert:

- ``deleted``: the copy is dropped;
- ``withheld`` (edited while the channel was paused or secure): dropped, as live ingestion
  keeps neither the old nor the new text of such an edit;
- ``edited``: dropped when the copy may be older than the edit (a later sync reads the
  edited text and stores it), kept when the copy already carries it.

A mark lasts as long as the message could still be retained (now + the channel's retention).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.policy import DAY_MS, now_ms

t = tables.tombstones
RANK = {"edited": 0, "withheld": 1, "deleted": 2}  # a stronger mark is never weakened
COPY_MARGIN_MS = 2_000  # the bot's clock (a page's read time) vs Discord's (an edit's time)
REASONS = {
    "deleted": "deleted since",
    "withheld": "edited while the channel was paused or secure",
    "edited": "edited after this copy was read",
}


@dataclass(frozen=True)
class Mark:
    kind: str
    at_ms: int


def copy_time_of_page(read_started_ms: int) -> int:
    """A history page's text is current as of when it was asked for (less the clock margin)."""
    return read_started_ms - COPY_MARGIN_MS


def copy_time_of_export(created_ms: int, edited_ms: int | None) -> int:
    """An export's text carries its last edit (``timestampEdited``, Discord's own clock)."""
    return (edited_ms or created_ms) + COPY_MARGIN_MS // 2


def blocks(mark: Mark | None, copy_ms: int) -> str | None:
    """Why a copy of a message read at ``copy_ms`` must not be stored, or None."""
    if mark is None:
        return None
    if mark.kind != "edited" or mark.at_ms > copy_ms:
        return REASONS[mark.kind]
    return None


async def load(conn: Any, guild_id: str, ids: list[str]) -> dict[str, Mark]:
    found: dict[str, Mark] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 500):
        rows = await conn.execute(
            sa.select(t.c.message_id, t.c.kind, t.c.at_ms).where(
                t.c.guild_id == guild_id, t.c.message_id.in_(unique[start : start + 500])
            )
        )
        found.update({r.message_id: Mark(r.kind, r.at_ms) for r in rows})
    return found


async def stored(conn: Any, guild_id: str, ids: list[str]) -> set[str]:
    """Which of these ids the ledger holds (deleted ones too)."""
    m = tables.messages
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        found.update(
            (
                await conn.scalars(
                    sa.select(m.c.message_id).where(
                        m.c.guild_id == guild_id, m.c.message_id.in_(part)
                    )
                )
            ).all()
        )
    return found


def retention_days(svc: Any, guild_id: str, channel_id: str, parent_id: str | None) -> int | None:
    """The retention of a channel memory remembers now (None: off, or no retention: no mark)."""
    if not guild_id or not svc.cache.guild(guild_id).enabled:
        return None
    mode, _ = svc.cache.effective(guild_id, channel_id, parent_id)
    if mode is None or mode.mode != "on":
        return None
    return svc.cache.retention_of(guild_id, mode)


async def record(
    conn: Any,
    dialect: str,
    guild_id: str,
    channel_id: str,
    marks: dict[str, Mark],
    days: int,
) -> None:
    """Upsert marks (message id → mark), keeping the stronger kind and the later time."""
    if not marks:
        return
    old = await load(conn, guild_id, list(marks))
    until = now_ms() + days * DAY_MS
    rows = []
    for message_id, new in marks.items():
        prev = old.get(message_id)
        kind, at = new.kind, new.at_ms
        if prev is not None:
            kind = max(prev.kind, new.kind, key=RANK.__getitem__)
            at = max(prev.at_ms, new.at_ms)
        rows.append(
            {
                "guild_id": guild_id,
                "message_id": message_id,
                "channel_id": channel_id,
                "kind": kind,
                "at_ms": at,
                "until_ms": until,
            }
        )
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(t)
    stmt = stmt.on_conflict_do_update(
        index_elements=["guild_id", "message_id"],
        set_={c: stmt.excluded[c] for c in ("channel_id", "kind", "at_ms", "until_ms")},
    )
    await conn.execute(stmt, rows)


async def drop_blocked(conn: Any, prepared: list[Any]) -> list[Any]:
    """The writer's creates without those a mark forbids (only copies from history carry
    ``copy_ms``; live messages are never checked: nothing can be deleted before it exists)."""
    copies: dict[str, list[str]] = {}
    for op, _ in prepared:
        if op.data.get("copy_ms") is not None and op.guild_id:
            copies.setdefault(op.guild_id, []).append(op.data["message_id"])
    if not copies:
        return prepared
    marks = {g: await load(conn, g, ids) for g, ids in copies.items()}
    return [
        (op, row)
        for op, row in prepared
        if op.data.get("copy_ms") is None
        or blocks(marks.get(op.guild_id or "", {}).get(op.data["message_id"]), op.data["copy_ms"])
        is None
    ]


async def purge(conn: Any, where: Any) -> int:
    return (await conn.execute(sa.delete(t).where(where))).rowcount or 0
