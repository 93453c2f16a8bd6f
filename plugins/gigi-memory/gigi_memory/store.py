"""Bulk statements: purges, storage-mode rewrites, retention, per-member export and delete.

Each runs in chunks of ``CHUNK`` rows, one transaction per chunk, so a purge of a big
channel never holds the database for long. All are idempotent: run twice, they change
nothing the second time (the writer may retry them after a lost connection).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.embedding import segments
from gigi_memory.policy import DAY_MS, now_ms
from gigi_memory.privacy import tombstones

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("gigi_memory")

CHUNK = 2000
COMPACT_MIN_SECONDS = 5.0  # compaction at most this often...
COMPACT_SHARE = 20  # ...and spaced by 20 times its last duration (at most 5 % of the time)
GIN_INDEX = "ix_memory_messages_tsv"
m = tables.messages
mm = tables.mentions


@dataclass
class Store:
    engine: AsyncEngine
    dialect: str
    fts_secure_delete: bool = False  # SQLite >= 3.42 removes deleted words from FTS5 at once
    # SQLite: words of deleted or edited text may linger in FTS5 segments. PostgreSQL: rows
    # were written since the GIN index's pending list was last merged (``note_written``).
    fts_dirty: bool = False
    gin_clean: bool = True  # PostgreSQL: False once the role may not clean the index
    last_compact_at: float = float("-inf")  # monotonic (0 would be "just now" on a new boot)
    last_compact_seconds: float = 0.0

    # -- full-text upkeep --------------------------------------------------------------------------

    async def prepare(self) -> None:
        """SQLite: ask FTS5 to remove a deleted row's words from the index immediately."""
        if self.dialect != "sqlite":
            return
        try:
            async with self.engine.begin() as conn:
                await conn.exec_driver_sql(
                    "INSERT INTO memory_fts(memory_fts, rank) VALUES ('secure-delete', 1)"
                )
            self.fts_secure_delete = True
        except Exception:  # an older SQLite: merge segments after deletes instead
            self.fts_secure_delete = False

    async def merge_fts(self, conn: Any) -> None:
        """After text left the ledger: note that FTS5 still holds its words in old segments.

        Without SQLite's ``secure-delete`` (3.42+) a deleted row's words stay in the index's
        segments until they are merged; ``compact`` rewrites the index so they are gone.
        """
        if self.dialect == "sqlite" and not self.fts_secure_delete:
            self.fts_dirty = True

    def note_written(self) -> None:
        """PostgreSQL: rows went in, so their words wait in the GIN index's pending list.

        GIN's fast update appends new entries to an unsorted list that every full-text
        query scans in full until it is merged (up to 4 MB by default: bench P6 as
        deployed measured the search statement's p95 at 52 ms with it full, 15 ms merged).
        The writer merges it when idle, spaced as SQLite's compaction is.
        """
        if self.dialect == "postgresql" and self.gin_clean:
            self.fts_dirty = True

    def compact_due(self) -> float | None:
        """Seconds until the next compaction may run (None: nothing to compact)."""
        if not self.fts_dirty:
            return None
        spacing = max(COMPACT_MIN_SECONDS, COMPACT_SHARE * self.last_compact_seconds)
        return max(0.0, self.last_compact_at + spacing - time.monotonic())

    async def compact(self) -> None:
        """SQLite: rewrite the FTS5 index into one segment (no deleted word survives in it).
        PostgreSQL: merge the GIN index's pending list into its tree."""
        if not self.fts_dirty:
            return
        self.fts_dirty = False
        started = time.monotonic()
        try:
            async with self.engine.begin() as conn:
                if self.dialect == "sqlite":
                    await conn.exec_driver_sql(
                        "INSERT INTO memory_fts(memory_fts) VALUES ('optimize')"
                    )
                else:
                    await conn.execute(
                        sa.text("SELECT gin_clean_pending_list(CAST(:ix AS regclass))"),
                        {"ix": GIN_INDEX},
                    )
        except sa.exc.ProgrammingError as exc:
            if self.dialect == "sqlite" or getattr(exc.orig, "sqlstate", None) != "42501":
                self.fts_dirty = True
                raise
            self.gin_clean = False  # not the index's owner: PostgreSQL's own flushes remain
            log.warning("memory: may not merge %s (not its owner); autovacuum will", GIN_INDEX)
        except BaseException:
            self.fts_dirty = True
            raise
        finally:
            self.last_compact_at = time.monotonic()
            self.last_compact_seconds = self.last_compact_at - started

    async def optimize_fts(self) -> None:
        """After a purge: compact at once (purges are rare; their text must go now)."""
        if self.dialect == "sqlite":
            self.fts_dirty = True
            await self.compact()

    # -- deleting in chunks ------------------------------------------------------------------------

    async def _delete_where(self, where: Any) -> int:
        """Delete matching messages and their mentions, ``CHUNK`` at a time."""
        total = 0
        while True:
            async with self.engine.begin() as conn:
                rows = (
                    await conn.execute(
                        sa.select(m.c.id, m.c.guild_id, m.c.message_id).where(where).limit(CHUNK)
                    )
                ).all()
                if not rows:
                    break
                by_guild: dict[str, list[str]] = {}
                for row in rows:
                    by_guild.setdefault(row.guild_id, []).append(row.message_id)
                for guild, ids in by_guild.items():
                    for start in range(0, len(ids), 500):
                        await conn.execute(
                            sa.delete(mm).where(
                                mm.c.guild_id == guild,
                                mm.c.message_id.in_(ids[start : start + 500]),
                            )
                        )
                row_ids = [r.id for r in rows]
                await segments.drop_rows(conn, row_ids)  # no vector outlives its message
                for start in range(0, len(row_ids), 500):
                    await conn.execute(sa.delete(m).where(m.c.id.in_(row_ids[start : start + 500])))
                total += len(rows)
                await self.merge_fts(conn)
            if len(rows) < CHUNK:
                break
        return total

    async def purge_channel(
        self, guild_id: str, *, channel_id: str, drop_mode: bool = False
    ) -> dict[str, int]:
        """Everything of a channel and its threads; ``drop_mode``: the channel is gone."""
        deleted = await self._delete_where(
            sa.and_(
                m.c.guild_id == guild_id,
                sa.or_(m.c.channel_id == channel_id, m.c.parent_channel_id == channel_id),
            )
        )
        if deleted:
            await self.optimize_fts()
        bf = tables.backfills
        async with self.engine.begin() as conn:
            # Its sync record goes too (a running sync stops: its row is gone).
            await conn.execute(
                sa.delete(bf).where(bf.c.guild_id == guild_id, bf.c.channel_id == channel_id)
            )
            if drop_mode:  # the channel is gone: nothing can bring its messages back
                tb = tables.tombstones
                await tombstones.purge(
                    conn, sa.and_(tb.c.guild_id == guild_id, tb.c.channel_id == channel_id)
                )
                await conn.execute(
                    sa.delete(tables.channels).where(
                        tables.channels.c.guild_id == guild_id,
                        tables.channels.c.channel_id == channel_id,
                    )
                )
        return {"messages": deleted}

    async def purge_guild(self, guild_id: str, *, keep_policy: bool = False) -> dict[str, int]:
        deleted = await self._delete_where(m.c.guild_id == guild_id)
        if deleted:
            await self.optimize_fts()
        async with self.engine.begin() as conn:
            await conn.execute(sa.delete(mm).where(mm.c.guild_id == guild_id))  # strays
            await segments.drop_guild(conn, guild_id)
            bf = tables.backfills
            await conn.execute(sa.delete(bf).where(bf.c.guild_id == guild_id))
            channels = 0
            if not keep_policy:  # the bot left: its marks go too (``/memory purge`` keeps them)
                await tombstones.purge(conn, tables.tombstones.c.guild_id == guild_id)
                channels = (
                    await conn.execute(
                        sa.delete(tables.channels).where(tables.channels.c.guild_id == guild_id)
                    )
                ).rowcount or 0
                await conn.execute(
                    sa.delete(tables.policies).where(tables.policies.c.guild_id == guild_id)
                )
        out = {"messages": deleted}
        if channels:
            out["channel_settings"] = channels
        return out

    async def purge_user(self, guild_id: str | None, *, user_id: str) -> dict[str, int]:
        """A member's messages (tombstones too) and every record of them being mentioned."""
        where = m.c.author_id == user_id
        if guild_id is not None:
            where = sa.and_(where, m.c.guild_id == guild_id)
        deleted = await self._delete_where(where)
        if deleted:
            await self.optimize_fts()
        async with self.engine.begin() as conn:
            cond = mm.c.user_id == user_id
            if guild_id is not None:
                cond = sa.and_(cond, mm.c.guild_id == guild_id)
            mentioned = (await conn.execute(sa.delete(mm).where(cond))).rowcount or 0
            bf = tables.backfills  # who started a sync: forgotten too (the sync stays)
            started = bf.c.started_by == user_id
            if guild_id is not None:
                started = sa.and_(started, bf.c.guild_id == guild_id)
            await conn.execute(sa.update(bf).where(started).values(started_by=None))
        out = {}
        if deleted:
            out["messages"] = deleted
        if mentioned:
            out["mentions"] = mentioned
        return out

    async def restrict(self, guild_id: str, *, storage: str) -> dict[str, int]:
        """A stricter storage mode: drop the sealed originals (and the search text)."""
        values: dict[str, Any] = {"sealed_key_id": None, "sealed_nonce": None, "sealed_text": None}
        todo = m.c.sealed_text.is_not(None)
        if storage == "metadata_only":  # no text left to find: the vectors go too
            await self.drop_vectors(guild_id)
            values |= {"search_text": None, "content_hash": None}
            todo = sa.or_(todo, m.c.search_text.is_not(None))
        total = 0
        while True:
            async with self.engine.begin() as conn:
                ids = (
                    await conn.scalars(
                        sa.select(m.c.id).where(m.c.guild_id == guild_id, todo).limit(CHUNK)
                    )
                ).all()
                if not ids:
                    break
                for start in range(0, len(ids), 500):
                    await conn.execute(
                        sa.update(m).where(m.c.id.in_(ids[start : start + 500])).values(**values)
                    )
                await self.merge_fts(conn)
            total += len(ids)
            if len(ids) < CHUNK:
                break
        if total:
            await self.optimize_fts()
        return {"rewritten": total}

    async def drop_vectors(self, guild_id: str | None) -> dict[str, int]:
        """Every segment of a guild, and its messages marked not embedded (embeddings off)."""
        assert guild_id is not None
        async with self.engine.begin() as conn:
            dropped = await segments.drop_guild(conn, guild_id)
            await conn.execute(
                sa.update(m)
                .where(m.c.guild_id == guild_id, m.c.vector_model.is_not(None))
                .values(vector_model=None)
            )
        return {"segments": dropped}

    async def retention(
        self, guild_id: str, *, channel_ids: list[str], days: int, own_threads: list[str]
    ) -> dict[str, int]:
        """New retention for channels (and their threads without a mode of their own)."""
        if not channel_ids:
            return {"updated": 0}
        where = sa.and_(
            m.c.guild_id == guild_id,
            sa.or_(
                m.c.channel_id.in_(channel_ids),
                sa.and_(
                    m.c.parent_channel_id.in_(channel_ids),
                    m.c.channel_id.not_in(own_threads) if own_threads else sa.true(),
                ),
            ),
        )
        async with self.engine.begin() as conn:
            result = await conn.execute(
                sa.update(m).where(where).values(retention_until_ms=m.c.created_ms + days * DAY_MS)
            )
        return {"updated": max(result.rowcount or 0, 0)}

    # -- retention purge (the scheduled job; any process) ---------------------------------------

    async def purge_expired(self, now: int | None = None) -> dict[str, int]:
        """Delete everything past ``retention_until``; counts by guild."""
        now = now_ms() if now is None else now
        async with self.engine.connect() as conn:
            counts = {
                row.guild_id: row.n
                for row in await conn.execute(
                    sa.select(m.c.guild_id, sa.func.count().label("n"))
                    .where(m.c.retention_until_ms <= now)
                    .group_by(m.c.guild_id)
                )
            }
        if counts:
            await self._delete_where(m.c.retention_until_ms <= now)
            await self.optimize_fts()
        async with self.engine.begin() as conn:  # no copy that old could be stored anyway
            await tombstones.purge(conn, tables.tombstones.c.until_ms <= now)
        return counts

    async def record_purge(self, guild_counts: dict[str, int], guild_ids: list[str]) -> None:
        """Remember when each guild's retention purge last ran and what it removed."""
        when = datetime.now(UTC)
        p = tables.policies
        async with self.engine.begin() as conn:
            for guild in guild_ids:
                await conn.execute(
                    sa.update(p)
                    .where(p.c.guild_id == guild)
                    .values(last_purge_at=when, last_purge_count=guild_counts.get(guild, 0))
                )

    # -- reading for privacy -----------------------------------------------------------------------

    async def user_messages(self, user_id: str, guild_id: str | None) -> list[Any]:
        where = sa.and_(m.c.author_id == user_id, m.c.deleted_ms.is_(None))
        if guild_id is not None:
            where = sa.and_(where, m.c.guild_id == guild_id)
        async with self.engine.connect() as conn:
            return list(
                (await conn.execute(sa.select(m).where(where).order_by(m.c.created_ms))).all()
            )

    async def user_mentions(self, user_id: str, guild_id: str | None) -> int:
        where = mm.c.user_id == user_id
        if guild_id is not None:
            where = sa.and_(where, mm.c.guild_id == guild_id)
        async with self.engine.connect() as conn:
            return int(
                await conn.scalar(sa.select(sa.func.count()).select_from(mm).where(where)) or 0
            )
