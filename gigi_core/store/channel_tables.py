"""Channel observation states and their recorded ranges (kernel_0004, kernel_0012); ids and times."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class ChannelObservation(Base):
    """A channel's observation state; no row means ``active``."""

    __tablename__ = "channel_observation"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    channel_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))  # active | paused | secure
    updated_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SecureRange(Base):
    """When a channel was secure (or paused): a backfill must bring back nothing from inside.

    One table for both states (``state``; rows before kernel_0012 are all ``secure``), so the
    privacy paths that handle secure ranges handle pause ranges too.
    """

    __tablename__ = "channel_secure_ranges"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    guild_id: Mapped[str] = mapped_column(String(64), index=True)
    channel_id: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), default="secure", server_default="secure")
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_by: Mapped[str | None] = mapped_column(String(64))


class ObserverStats(Base):
    """Per-plugin event delivery counters, added up across processes (metadata only)."""

    __tablename__ = "observer_stats"

    plugin: Mapped[str] = mapped_column(String(64), primary_key=True)
    delivered: Mapped[int] = mapped_column(Integer, default=0)
    dropped: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    timed_out: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
