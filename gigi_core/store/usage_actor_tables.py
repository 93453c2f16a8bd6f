"""Usage per member and UTC day (revision kernel_0023) and week (kernel_0024), folded from
the usage events by a job.

The usage row's write (on every model call's path) stays as it was: a background job folds
the events newer than the watermark into ``llm_usage_actor_days``; the database's triggers
(kernel_0024) keep ``llm_usage_actor_weeks`` the sum of those days. The per-member report
reads the window's whole weeks, its edge days and the few events the job has not folded.
"""

from __future__ import annotations

from datetime import date

from sqlalchemy import BigInteger, Date, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base

#: The rollup's ``actor_id`` for calls no member made (events with ``actor_id`` NULL): a key
#: column cannot be NULL, and no Discord id or pseudonym is empty.
NO_ACTOR = ""


class LlmUsageActorDay(Base):
    """One member's calls and tokens in one guild on one UTC day (events with a guild only)."""

    __tablename__ = "llm_usage_actor_days"
    # SQLite: rows stored in key order, so a guild's days are one range read (no row-id hop).
    __table_args__ = {"sqlite_with_rowid": False}

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    actor_id: Mapped[str] = mapped_column(String(64), primary_key=True)  # NO_ACTOR: nobody
    calls: Mapped[int] = mapped_column(BigInteger, default=0)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)


class LlmUsageActorWeek(Base):
    """One member's calls and tokens in one guild in one UTC week (starting Monday): the
    sum of the member's days that week, kept by triggers on the daily table (whoever writes
    it), so a 90-day report reads ~4x fewer rows."""

    __tablename__ = "llm_usage_actor_weeks"
    __table_args__ = {"sqlite_with_rowid": False}

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    week: Mapped[date] = mapped_column(Date, primary_key=True)  # the week's Monday
    actor_id: Mapped[str] = mapped_column(String(64), primary_key=True)  # NO_ACTOR: nobody
    calls: Mapped[int] = mapped_column(BigInteger, default=0)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)


class LlmUsageActorWatermark(Base):
    """The last usage event id folded into the per-member days and weeks (one row, id 1).

    Advanced in the fold's own transaction, so a fold that fails midway folded nothing; the
    privacy paths update this row first, so they and a fold run one after the other.
    """

    __tablename__ = "llm_usage_actor_watermark"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_event_id: Mapped[int] = mapped_column(BigInteger, default=0)
