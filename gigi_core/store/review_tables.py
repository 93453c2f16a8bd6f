"""Plugin upgrade reviews (revision kernel_0019): held-back actions and who accepted them.

An upgrade that widens what a plugin may do records one row per widened action for the new
version; each guild accepts a plugin version once. Names and short change labels only.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class PluginHold(Base):
    """An action a plugin version added or widened; ``*`` holds every action of it."""

    __tablename__ = "plugin_holds"

    plugin: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    action: Mapped[str] = mapped_column(String(200), primary_key=True)
    change: Mapped[str] = mapped_column(String(500))  # what widened, from the manifests
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PluginReviewAccept(Base):
    """A guild admin accepted a plugin version's held-back actions in that guild."""

    __tablename__ = "plugin_review_accepts"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    plugin: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    accepted_by: Mapped[str | None] = mapped_column(String(64))
    accepted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
