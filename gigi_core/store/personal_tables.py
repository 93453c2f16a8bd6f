"""Personal keys: a member's remembered billing choice and their guild-context disclosure
acknowledgement, per guild (revision kernel_0016).

Metadata only: who, where, which choice and when; never a key, prompt or message.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class LlmBillingChoice(Base):
    """``server`` or ``me``: who pays for this member's later requests in this guild."""

    __tablename__ = "llm_billing_choices"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    billing: Mapped[str] = mapped_column(String(8))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LlmContextDisclosure(Base):
    """The member confirmed that guild context may be sent to their own provider here."""

    __tablename__ = "llm_context_disclosures"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    acknowledged_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
