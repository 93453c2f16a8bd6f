"""Channel observation states: which channels observers may see, and when a channel was secure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update

from gigi_core.errors import ConfigError
from gigi_core.events import OBSERVATION_STATES
from gigi_core.store.channel_tables import ChannelObservation, SecureRange
from gigi_core.store.db import Database
from gigi_core.store.tables import utcnow

RECORDED = ("paused", "secure")  # the states whose spans are kept (channel_secure_ranges)


@dataclass(frozen=True)
class ChannelChange:
    """What an admin changed: the state before and after."""

    guild_id: str
    channel_id: str
    before: str
    after: str


class ChannelStateStore:
    """``active`` unless a row says ``paused`` or ``secure``; each paused or secure span is recorded."""

    def __init__(self, db: Database, *, on_change: Callable[[str], None] = lambda g: None) -> None:
        self.db = db
        self.on_change = on_change  # clears the event router's cached guild facts

    async def states(self, guild_id: str) -> dict[str, str]:
        """Channels of a guild that are not active, with their state."""
        async with self.db.session() as s:
            rows = await s.execute(
                select(ChannelObservation.channel_id, ChannelObservation.state).where(
                    ChannelObservation.guild_id == guild_id,
                    ChannelObservation.state != "active",
                )
            )
            return {channel: state for channel, state in rows.all()}

    async def get(self, guild_id: str, channel_id: str) -> str:
        async with self.db.session() as s:
            row = await s.get(ChannelObservation, (guild_id, channel_id))
            return row.state if row else "active"

    async def set(
        self, guild_id: str, channel_id: str, state: str, *, by: str | None = None
    ) -> ChannelChange:
        if state not in OBSERVATION_STATES:
            raise ConfigError(
                f"channel state must be one of {', '.join(OBSERVATION_STATES)}, not {state!r}"
            )
        now = utcnow()
        async with self.db.session() as s:
            # Create the row first (a no-op if it exists): two admins changing a new channel
            # at once then wait on the same row instead of both inserting it, and the state
            # read below is the latest (row lock on PostgreSQL, write lock on SQLite).
            await s.execute(self._insert_if_missing(guild_id, channel_id, now))
            row = await s.get(
                ChannelObservation,
                (guild_id, channel_id),
                with_for_update=True,
                populate_existing=True,
            )
            assert row is not None
            before = row.state
            row.state, row.updated_by, row.updated_at = state, by, now
            if before != state:
                await self._record_span(s, guild_id, channel_id, before, state, by, now)
        self.on_change(guild_id)
        return ChannelChange(guild_id, channel_id, before, state)

    async def _record_span(
        self, s: Any, guild_id: str, channel_id: str, before: str, after: str, by: Any, now: Any
    ) -> None:
        """Close the span of the state left (paused or secure), open one for the state entered."""
        if before in RECORDED:
            await s.execute(
                update(SecureRange)
                .where(
                    SecureRange.guild_id == guild_id,
                    SecureRange.channel_id == channel_id,
                    SecureRange.state == before,
                    SecureRange.ended_at.is_(None),
                )
                .values(ended_at=now)
            )
        if after in RECORDED:
            s.add(
                SecureRange(
                    guild_id=guild_id,
                    channel_id=channel_id,
                    state=after,
                    started_at=now,
                    started_by=by,
                )
            )

    def _insert_if_missing(self, guild_id: str, channel_id: str, now: Any) -> Any:
        if self.db.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        return (
            insert(ChannelObservation)
            .values(guild_id=guild_id, channel_id=channel_id, state="active", updated_at=now)
            .on_conflict_do_nothing(index_elements=["guild_id", "channel_id"])
        )

    async def secure_ranges(
        self, guild_id: str, channel_id: str | None = None
    ) -> list[SecureRange]:
        """When the channel (or, without one, any channel of the guild) was secure."""
        return await self._ranges("secure", guild_id, channel_id)

    async def pause_ranges(self, guild_id: str, channel_id: str | None = None) -> list[SecureRange]:
        """When the channel was paused: a backfill or import takes nothing from inside one."""
        return await self._ranges("paused", guild_id, channel_id)

    async def _ranges(self, state: str, guild_id: str, channel_id: str | None) -> list[SecureRange]:
        async with self.db.session() as s:
            query = select(SecureRange).where(
                SecureRange.guild_id == guild_id, SecureRange.state == state
            )
            if channel_id is not None:
                query = query.where(SecureRange.channel_id == channel_id)
            return list((await s.scalars(query.order_by(SecureRange.started_at))).all())
