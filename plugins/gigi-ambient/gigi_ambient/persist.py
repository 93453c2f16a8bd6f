"""History rows for servers that turned ``persist_history`` on: sealed text, clear ids.

The text is sealed with the kernel's state key (``kernel.state_sealer``, as guild memory
seals its messages) and bound to the guild and the row, so a row copied elsewhere does not
open. Ids, role and time stay in the clear for erasure and retention.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from gigi_ambient.history import Entry
from gigi_ambient.tables import history
from gigi_core import Sealed

log = logging.getLogger(__name__)


def _associated(guild_id: str, key: str) -> str:
    return f"ambient-history:{guild_id}:{key}"


class HistoryStore:
    def __init__(self, engine: Any, sealer: Any) -> None:
        self.engine = engine
        self._sealer = sealer  # a callable: the kernel's state sealer is made on first use

    def _row(self, guild_id: str, entry: Entry) -> dict[str, Any]:
        sealed = self._sealer().seal(
            entry.text, _associated(guild_id, entry.key), fingerprint=False
        )
        return {
            "key": entry.key,
            "guild_id": guild_id,
            "channel_id": entry.channel_id,
            "message_id": entry.message_id,
            "role": entry.role,
            "author_id": entry.author_id,
            "seq": entry.seq,
            "at": entry.at,
            "key_id": sealed.key_id,
            "nonce": sealed.nonce,
            "sealed": sealed.ciphertext,
        }

    def _entry(self, row: Any) -> Entry | None:
        try:
            text = self._sealer().open(
                Sealed(row.key_id, row.nonce, row.sealed), _associated(row.guild_id, row.key)
            )
        except Exception as exc:  # a lost key or a moved row: that entry is not restored
            log.warning("ambient: a stored history entry did not open (%s)", type(exc).__name__)
            return None
        at = row.at if row.at.tzinfo else row.at.replace(tzinfo=UTC)  # SQLite drops it
        return Entry(
            row.channel_id, row.role, row.author_id, text, row.message_id, row.key, at, row.seq
        )

    async def load(self, guild_id: str, since: datetime) -> list[Entry]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.select(history)
                .where(history.c.guild_id == guild_id, history.c.at >= since)
                .order_by(history.c.seq)
            )
            found = [self._entry(r) for r in rows]
        return [e for e in found if e is not None]

    async def sync(self, guild_id: str, write: Iterable[Entry], delete: Iterable[str]) -> None:
        """Delete the ``delete`` keys and (re)write ``write``, in one transaction."""
        write, keys = list(write), {*delete, *(e.key for e in write)}
        rows = [self._row(guild_id, e) for e in write]
        async with self.engine.begin() as conn:
            if keys:
                await conn.execute(
                    sa.delete(history).where(
                        history.c.guild_id == guild_id, history.c.key.in_(sorted(keys))
                    )
                )
            if rows:
                await conn.execute(sa.insert(history), rows)

    async def _delete(self, *where: Any) -> int:
        async with self.engine.begin() as conn:
            result = await conn.execute(sa.delete(history).where(*where))
        return int(result.rowcount or 0)

    async def expire(self, guild_id: str, before: datetime) -> int:
        return await self._delete(history.c.guild_id == guild_id, history.c.at < before)

    async def forget_messages(self, guild_id: str, message_ids: Iterable[str]) -> int:
        ids = sorted(set(message_ids))
        return await self._delete(history.c.guild_id == guild_id, history.c.message_id.in_(ids))

    async def forget_channel(self, guild_id: str, channel_id: str) -> int:
        return await self._delete(
            history.c.guild_id == guild_id, history.c.channel_id == channel_id
        )

    async def forget_author(self, guild_id: str | None, author_id: str) -> int:
        where = [history.c.author_id == author_id, history.c.role == "user"]
        if guild_id is not None:
            where.append(history.c.guild_id == guild_id)
        return await self._delete(*where)

    async def purge_guild(self, guild_id: str) -> int:
        return await self._delete(history.c.guild_id == guild_id)

    async def of_author(self, guild_id: str | None, author_id: str) -> list[tuple[str, Entry]]:
        """(guild, entry) of a member's stored messages, for ``gigi privacy export``."""
        query = sa.select(history).where(history.c.author_id == author_id, history.c.role == "user")
        if guild_id is not None:
            query = query.where(history.c.guild_id == guild_id)
        async with self.engine.connect() as conn:
            rows = list(await conn.execute(query.order_by(history.c.seq)))
        found = [(r.guild_id, self._entry(r)) for r in rows]
        return [(g, e) for g, e in found if e is not None]

    async def guilds(self) -> list[str]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(sa.select(history.c.guild_id).distinct())
            return [r.guild_id for r in rows]
