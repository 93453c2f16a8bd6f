"""Reads and writes of the plugin's two tables, the same SQL on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from gigi_ambient.tables import COUNTERS, channels, daily


def today(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d")


class AmbientStore:
    def __init__(self, engine: Any) -> None:
        self.engine = engine

    async def enable(self, guild_id: str, channel_id: str, persona: str, by: str | None) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                sa.delete(channels).where(
                    channels.c.guild_id == guild_id, channels.c.channel_id == channel_id
                )
            )
            await conn.execute(
                sa.insert(channels).values(
                    guild_id=guild_id,
                    channel_id=channel_id,
                    persona=persona,
                    enabled_by=by,
                    enabled_at=datetime.now(UTC),
                )
            )

    async def disable(self, guild_id: str, channel_id: str) -> bool:
        async with self.engine.begin() as conn:
            result = await conn.execute(
                sa.delete(channels).where(
                    channels.c.guild_id == guild_id, channels.c.channel_id == channel_id
                )
            )
        return bool(result.rowcount)

    async def channels_of(self, guild_id: str) -> dict[str, str]:
        """Channel id -> persona text, for one guild."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.select(channels.c.channel_id, channels.c.persona).where(
                    channels.c.guild_id == guild_id
                )
            )
            return {r.channel_id: r.persona for r in rows}

    async def purge_guild(self, guild_id: str) -> int:
        async with self.engine.begin() as conn:
            gone = await conn.execute(sa.delete(channels).where(channels.c.guild_id == guild_id))
            await conn.execute(sa.delete(daily).where(daily.c.guild_id == guild_id))
        return int(gone.rowcount or 0)

    async def add(self, guild_id: str, day: str, counts: dict[str, int]) -> None:
        """Add to a day's counters: an update, or the row's insert when there is none yet."""
        values = {name: int(counts.get(name, 0)) for name in COUNTERS}
        async with self.engine.begin() as conn:
            updated = await conn.execute(
                sa.update(daily)
                .where(daily.c.guild_id == guild_id, daily.c.day == day)
                .values({name: daily.c[name] + values[name] for name in COUNTERS})
            )
            if not updated.rowcount:
                try:
                    async with conn.begin_nested():
                        await conn.execute(
                            sa.insert(daily).values(guild_id=guild_id, day=day, **values)
                        )
                except sa.exc.IntegrityError:  # another writer inserted it first
                    await conn.execute(
                        sa.update(daily)
                        .where(daily.c.guild_id == guild_id, daily.c.day == day)
                        .values({name: daily.c[name] + values[name] for name in COUNTERS})
                    )

    def _insert_day(self, conn: Any, guild_id: str, day: str) -> Any:
        """The day's row, inserted when missing (a no-op when it exists)."""
        if conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        zeros = dict.fromkeys(COUNTERS, 0)
        return (
            insert(daily)
            .values(guild_id=guild_id, day=day, reserved=0, **zeros)
            .on_conflict_do_nothing(index_elements=["guild_id", "day"])
        )

    async def settle(self, guild_id: str, day: str, held: int, used: int) -> None:
        """Release ``held`` reserved tokens and add the ``used`` ones, in one statement."""
        async with self.engine.begin() as conn:
            if not held:
                await conn.execute(self._insert_day(conn, guild_id, day))
            await conn.execute(
                sa.update(daily)
                .where(daily.c.guild_id == guild_id, daily.c.day == day)
                .values(
                    reserved=sa.func.max(daily.c.reserved - held, 0)
                    if conn.dialect.name == "sqlite"
                    else sa.func.greatest(daily.c.reserved - held, 0),
                    tokens=daily.c.tokens + used,
                )
            )

    async def day(self, guild_id: str, day: str) -> dict[str, int]:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    sa.select(*(daily.c[n] for n in COUNTERS)).where(
                        daily.c.guild_id == guild_id, daily.c.day == day
                    )
                )
            ).first()
        return {n: int(getattr(row, n)) if row else 0 for n in COUNTERS}
