"""The names members wrote under: recorded as messages come in, matched when searching.

Ingest never waits for a name: ``note`` remembers (guild, author, name) once per process and
a background task upserts what is new in one transaction. Search reads a guild's names once
per ``NAMES_SECONDS`` (at once after this process recorded one) as ``word -> authors``.
Names are never copied into a message's index: a rename adds a name, and deleting a
member's data deletes their names (``forget``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.ingest.text import words

log = logging.getLogger("gigi_memory")
a = tables.authors

NAME_CHARS = 100
NAMES_SECONDS = 60.0  # how stale another process's new names may be for search
SEEN_LIMIT = 100_000  # (guild, author, name) kept as already recorded, per process


def name_words(name: str | None) -> str:
    """The name as search words joined by spaces ("" when it has none: emoji only)."""
    if not name:
        return ""
    return " ".join(words(name[:NAME_CHARS]))[:200].strip()


class Authors:
    """One store's names: the write-behind of new ones and the per-guild lookup."""

    def __init__(self, engine: Any, dialect: str) -> None:
        self.engine, self.dialect = engine, dialect
        self._seen: set[tuple[str, str, str]] = set()
        self._pending: dict[tuple[str, str, str], tuple[str, int]] = {}
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._maps: dict[str, tuple[float, dict[str, frozenset[str]]]] = {}

    def note(self, guild_id: str, author_id: str, name: str | None, at_ms: int) -> None:
        """Record that ``author_id`` wrote as ``name``: one set lookup when already known."""
        if not name:
            return
        key = (guild_id, author_id, name)
        if key in self._seen:
            return
        if len(self._seen) > SEEN_LIMIT:
            self._seen.clear()
        self._seen.add(key)
        key_words = name_words(name)
        if not key_words:  # emoji only: nothing a query could match
            return
        self._pending[(guild_id, author_id, key_words)] = (name[:NAME_CHARS], at_ms)
        self._maps.pop(guild_id, None)
        if self._task is None or self._task.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a synchronous caller): written by the next flush
                return
            self._task = loop.create_task(self.flush(), name="gigi-memory-authors")

    async def flush(self) -> None:
        """Upsert what ``note`` collected; a failure forgets it so a later message retries.
        One flush at a time (``_lock``): ``forget`` waits for a batch already taken."""
        async with self._lock:
            while self._pending:
                batch, self._pending = self._pending, {}
                try:
                    async with self.engine.begin() as conn:
                        for (guild, author, key_words), (name, at) in batch.items():
                            await conn.execute(
                                _upsert(self.dialect, guild, author, key_words, name, at)
                            )
                except Exception as exc:
                    log.warning("memory: could not record author names: %s", type(exc).__name__)
                    failed = {(g, au) for g, au, _ in batch}
                    self._seen = {k for k in self._seen if (k[0], k[1]) not in failed}
                    return

    async def names(self, conn: Any, guild_id: str) -> dict[str, frozenset[str]]:
        """``word -> authors`` for the guild: every word of every name they wrote under."""
        known = self._maps.get(guild_id)
        if known is not None and time.monotonic() - known[0] < NAMES_SECONDS:
            return known[1]
        rows = await conn.execute(
            sa.select(a.c.author_id, a.c.name_words).where(a.c.guild_id == guild_id)
        )
        found: dict[str, set[str]] = {}
        for author, key_words in rows:
            for word in key_words.split():
                found.setdefault(word, set()).add(author)
        out = {w: frozenset(s) for w, s in found.items()}
        if len(self._maps) > 10_000:
            self._maps.clear()
        self._maps[guild_id] = (time.monotonic(), out)
        return out

    async def export(self, user_id: str, guild_id: str | None) -> list[dict[str, Any]]:
        query = sa.select(a.c.guild_id, a.c.name, a.c.first_ms, a.c.last_ms).where(
            a.c.author_id == user_id
        )
        if guild_id is not None:
            query = query.where(a.c.guild_id == guild_id)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query.order_by(a.c.guild_id, a.c.first_ms))).all()
        return [
            {"guild_id": g, "name": n, "first_seen_ms": f, "last_seen_ms": last}
            for g, n, f, last in rows
        ]

    async def forget(self, user_id: str | None, guild_id: str | None) -> int:
        """Delete a member's names (in one guild or all), or a whole guild's (``user_id``
        None); returns how many rows went."""
        # A name queued a moment ago goes too, and a batch the background flush already
        # took lands first (the lock), so it cannot be written back after the delete.
        await self.flush()
        query = sa.delete(a)
        if user_id is not None:
            query = query.where(a.c.author_id == user_id)
        if guild_id is not None:
            query = query.where(a.c.guild_id == guild_id)
        async with self.engine.begin() as conn:
            gone = (await conn.execute(query)).rowcount or 0
        self._seen = {k for k in self._seen if not _matches(k, user_id, guild_id)}
        self._maps.clear()
        return int(gone)

    async def prune(self) -> int:
        """Names of members with no message left in the guild (retention took them)."""
        m = tables.messages
        orphan = ~sa.exists().where(
            (m.c.guild_id == a.c.guild_id) & (m.c.author_id == a.c.author_id)
        )
        async with self.engine.begin() as conn:
            gone = (await conn.execute(sa.delete(a).where(orphan))).rowcount or 0
        if gone:
            self._seen.clear()
            self._maps.clear()
        return int(gone)


def _matches(key: tuple[str, str, str], user_id: str | None, guild_id: str | None) -> bool:
    return (user_id is None or key[1] == user_id) and (guild_id is None or key[0] == guild_id)


def _upsert(dialect: str, guild: str, author: str, key_words: str, name: str, at: int) -> Any:
    """Insert the name, or on a known one keep its first time and move its last time on."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert

        latest: Any = sa.func.greatest(a.c.last_ms, at)
    else:
        from sqlalchemy.dialects.sqlite import insert

        latest = sa.func.max(a.c.last_ms, at)
    values = {"guild_id": guild, "author_id": author, "name_words": key_words, "name": name}
    stmt = insert(a).values(**values, first_ms=at, last_ms=at)
    return stmt.on_conflict_do_update(
        index_elements=["guild_id", "author_id", "name_words"],
        set_={"name": name, "last_ms": latest},
    )
