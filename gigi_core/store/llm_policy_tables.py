"""Per-place and per-role LLM policies (revision kernel_0017); ids, model ids and the
admins' channel instructions, never member messages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class LlmPlacePolicy(Base):
    """What admins set for one place of a guild: the guild itself, a category, a channel,
    a forum or a thread. An unset field inherits from the place's parent."""

    __tablename__ = "llm_place_policies"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    place_id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the guild id for it
    kind: Mapped[str] = mapped_column(String(16))  # guild|category|channel|forum|thread
    # purpose -> {"profile": purpose} or {"model": model id}, both within the guild's own keys
    models: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    prompt: Mapped[str | None] = mapped_column(Text)
    answer: Mapped[str | None] = mapped_column(String(8))  # mention|replies|every
    updated_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LlmRolePolicy(Base):
    """The models (ids or profile purposes) the members holding a role may use."""

    __tablename__ = "llm_role_policies"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    role_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    models: Mapped[list[Any]] = mapped_column(JSON, default=list)
    updated_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
