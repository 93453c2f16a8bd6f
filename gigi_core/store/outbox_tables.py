"""The buttons of messages plugins posted (revision kernel_0010): a token, the command it
runs and the command's arguments (ids the plugin chose), until it expires."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class OutboxButton(Base):
    __tablename__ = "gigi_outbox_buttons"
    __table_args__ = (Index("ix_gigi_outbox_buttons_expires", "expires_at"),)

    token: Mapped[str] = mapped_column(String(32), primary_key=True)
    guild_id: Mapped[str] = mapped_column(String(64))
    plugin: Mapped[str] = mapped_column(String(128))
    command: Mapped[str] = mapped_column(String(200))
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
