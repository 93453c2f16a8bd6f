"""LLM tables: credentials, model profiles, guild policies, usage events (revision kernel_0002)
and the usage rollup (kernel_0007).

Secrets live only in ``llm_credentials.ciphertext`` (AES-GCM, associated data bound to the
row id and owner). Usage rows are metadata: no prompts, completions, bodies or secrets.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow

# A credential is "active" (its label taken) until it is revoked.
ACTIVE_CREDENTIAL = text("revoked_at IS NULL")


class LlmCredential(Base):
    """A provider key owned by a guild, a user or the tenant (operator); write-only secret."""

    __tablename__ = "llm_credentials"
    __table_args__ = (
        Index("ix_llm_credentials_owner", "owner_type", "owner_id"),
        # Labels are unique among an owner's active credentials; a revoked label can be reused.
        # Partial unique indexes exist on both SQLite and PostgreSQL.
        Index(
            "uq_llm_credentials_active_label",
            "owner_type",
            "owner_id",
            "label",
            unique=True,
            sqlite_where=ACTIVE_CREDENTIAL,
            postgresql_where=ACTIVE_CREDENTIAL,
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_type: Mapped[str] = mapped_column(String(8))  # guild | user | tenant
    owner_id: Mapped[str] = mapped_column(String(64))
    provider: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(64))
    base_url: Mapped[str | None] = mapped_column(String(500))
    # Added by a member or guild admin from a surface: the base URL's host is checked at
    # every connect (``gigi_core.llm.url_guard``), kernel_0022.
    url_checked: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Sealed secret; cleared (NULL) when the credential is revoked.
    key_id: Mapped[str | None] = mapped_column(String(32))
    nonce: Mapped[bytes | None] = mapped_column(LargeBinary)
    ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary)
    fingerprint: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default="active")  # active|failing|revoked
    last_test_status: Mapped[str | None] = mapped_column(String(16))
    last_tested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_error_class: Mapped[str | None] = mapped_column(String(32))
    created_by: Mapped[str | None] = mapped_column(String(64))
    updated_by: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LlmModelProfile(Base):
    """Which credential and model an owner uses for one purpose; fallback stays on that key."""

    __tablename__ = "llm_model_profiles"
    __table_args__ = (UniqueConstraint("owner_type", "owner_id", "purpose", name="uq_llm_profile"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_type: Mapped[str] = mapped_column(String(8))
    owner_id: Mapped[str] = mapped_column(String(64))
    purpose: Mapped[str] = mapped_column(String(16))  # chat | reasoning | embedding | routing
    credential_id: Mapped[str] = mapped_column(String(32), ForeignKey("llm_credentials.id"))
    model: Mapped[str] = mapped_column(String(200))
    fallback_model: Mapped[str | None] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    selected_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: Prices per million input / output tokens (kernel_0018): what money budgets count in.
    input_price: Mapped[float | None] = mapped_column(Float)
    output_price: Mapped[float | None] = mapped_column(Float)
    currency: Mapped[str | None] = mapped_column(String(8))
    #: The cheaper model on the same credential that answers once a budget is spent.
    budget_fallback_model: Mapped[str | None] = mapped_column(String(200))


class LlmGuildPolicy(Base):
    """Per-guild LLM policy; a guild without a row gets the defaults (off, no tenant fallback)."""

    __tablename__ = "llm_guild_policies"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    personal_keys: Mapped[str] = mapped_column(String(16), default="off")
    tenant_fallback: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LlmUsageEvent(Base):
    """One provider call, success or failure: who, where, which model, tokens, latency."""

    __tablename__ = "llm_usage_events"
    # A report's partial first day reads one guild's events of one day (kernel_0007).
    __table_args__ = (Index("ix_llm_usage_events_guild_created", "guild_id", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    request_id: Mapped[str] = mapped_column(String(64))
    actor_id: Mapped[str | None] = mapped_column(String(64))
    guild_id: Mapped[str | None] = mapped_column(String(64), index=True)
    channel_id: Mapped[str | None] = mapped_column(String(64))
    provider: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200))
    purpose: Mapped[str] = mapped_column(String(16))
    billing_owner_type: Mapped[str] = mapped_column(String(8))
    billing_owner_id: Mapped[str] = mapped_column(String(64))
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    reasoning_tokens: Mapped[int | None] = mapped_column(Integer)
    cached_tokens: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))  # ok | error
    error_class: Mapped[str | None] = mapped_column(String(32))
    latency_ms: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, index=True
    )
    # kernel_0020: the failover entry that made this call (1 = the list's first; NULL =
    # the profile's own call) and the error class that moved the call on to it.
    failover_step: Mapped[int | None] = mapped_column(Integer)
    failover_reason: Mapped[str | None] = mapped_column(String(32))


class LlmUsageRollup(Base):
    """Usage events summed per guild, UTC day *and* UTC hour, provider, model, purpose, status.

    Written in the same transaction as the events (``gigi_core.llm.usage``): a report reads
    whole days here, the whole hours of a partial first day here too, and only the events
    of its first partial hour, so it costs O(days), not O(calls).
    """

    __tablename__ = "llm_usage_rollup"
    # SQLite: rows stored in key order, so a guild's days are one range read (no row-id hop).
    __table_args__ = {"sqlite_with_rowid": False}

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    period: Mapped[str] = mapped_column(String(4), primary_key=True)  # day | hour
    bucket: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    provider: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    purpose: Mapped[str] = mapped_column(String(16), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    # Sums can pass 2**31 for a busy guild's day: 64-bit on PostgreSQL.
    calls: Mapped[int] = mapped_column(BigInteger, default=0)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
