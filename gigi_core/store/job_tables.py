"""Background-job records (revision kernel_0005): metadata only, never payload text in logs.

``gigi_jobs`` is the kernel's view of every job on both backends: status, attempts,
progress and the error class of the last failure. On PostgreSQL the job engine
(pgqueuer, in its own schema) holds the dispatch entries; this table stays the record.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class JobRow(Base):
    """One deferred job. ``key_lock`` holds the key while the job is queued and never started,
    so at most one such job exists per (name, key); it is cleared when the job is claimed."""

    __tablename__ = "gigi_jobs"
    __table_args__ = (
        UniqueConstraint("name", "key_lock", name="uq_gigi_jobs_key_lock"),
        Index("ix_gigi_jobs_due", "status", "name", "run_at"),  # claims, counts, next due
        Index("ix_gigi_jobs_created_at", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16))  # queued|running|done|failed|cancelled
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    key: Mapped[str | None] = mapped_column(String(200))
    key_lock: Mapped[str | None] = mapped_column(String(200))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    run_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    worker: Mapped[str | None] = mapped_column(String(128))
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    progress_done: Mapped[int | None] = mapped_column(Integer)
    progress_total: Mapped[int | None] = mapped_column(Integer)
    progress_note: Mapped[str | None] = mapped_column(String(200))
    error_class: Mapped[str | None] = mapped_column(String(128))
    engine_ref: Mapped[int | None] = mapped_column(BigInteger)  # pgqueuer's entry id


class JobSchedule(Base):
    """The last cron tick fired per periodic job: a conditional update fires each tick once."""

    __tablename__ = "gigi_job_schedules"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    schedule: Mapped[str] = mapped_column(String(128))
    last_tick: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
