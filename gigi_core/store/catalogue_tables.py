"""Model listings per credential (revision kernel_0020), shared by every process.

One row per credential: the key fingerprint it was fetched with (a rotated key's row is
never served), when, and the model ids with their public facts. No secret, no prompt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class LlmModelCatalogue(Base):
    """What a credential's provider listed at ``fetched_at`` for the key ``fingerprint``."""

    __tablename__ = "llm_model_catalogue"

    credential_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(32))
    provider: Mapped[str] = mapped_column(String(64))
    #: [{"id": ..., "display_name": ..., ...}] as ``ModelInfo.as_dict`` writes them.
    models: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    fetched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
