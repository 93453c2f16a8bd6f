"""Provider failover lists (revision kernel_0020): per owner and purpose, the credentials
and models tried, in order, when the profile's own call fails in a listed way."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class LlmFailover(Base):
    """One owner's failover list for one purpose; every entry is a credential of that owner."""

    __tablename__ = "llm_failover"
    __table_args__ = (
        UniqueConstraint("owner_type", "owner_id", "purpose", name="uq_llm_failover"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_type: Mapped[str] = mapped_column(String(8))
    owner_id: Mapped[str] = mapped_column(String(64))
    purpose: Mapped[str] = mapped_column(String(16))
    #: [{"credential_id": ..., "model": ...}, ...] in the order they are tried.
    entries: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    #: The error classes that move a call to the next entry.
    on_errors: Mapped[list[str]] = mapped_column(JSON, default=list)
    updated_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
