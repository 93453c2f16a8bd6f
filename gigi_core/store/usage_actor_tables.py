"""Usage per member and UTC day (revision kernel_0023), folded from the usage events by a job.

The usage row's write (on every model call's path) stays as it was: a background job folds
the events newer than the watermark into ``llm_usage_actor_days``, so the per-member report
reads O(days x members) rows plus the few events the job has not folded yet.
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


class LlmUsageActorWatermark(Base):
    """The last usage event id folded into ``llm_usage_actor_days`` (one row, id 1).

    Advanced in the fold's own transaction, so a fold that fails midway folded nothing; the
    privacy paths update this row first, so they and a fold run one after the other.
    """

    __tablename__ = "llm_usage_actor_watermark"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_event_id: Mapped[int] = mapped_column(BigInteger, default=0)
