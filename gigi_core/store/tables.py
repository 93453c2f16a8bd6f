"""The kernel's tables. Audit rows hold metadata only: never argument values, results or text."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Kernel metadata; alembic revision 0001 creates exactly these tables (drift-tested)."""


class GuildPlugin(Base):
    """Per-guild plugin state: enabled flag, validated config (secrets live sealed elsewhere)."""

    __tablename__ = "guild_plugins"

    guild_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    plugin: Mapped[str] = mapped_column(String(64), primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    allow_external: Mapped[bool] = mapped_column(Boolean, default=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The distribution (or "default:NAME" / "inline:NAME") that saved this row: a plugin
    # of the same name from elsewhere gets neither the row nor its sealed config.
    distribution: Mapped[str | None] = mapped_column(String(200))
    updated_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CapabilityGrant(Base):
    """A capability (or ``plugin.*`` wildcard) granted to a user or a role in one guild."""

    __tablename__ = "capability_grants"
    __table_args__ = (
        UniqueConstraint("guild_id", "capability", "subject_type", "subject_id", name="uq_grant"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    guild_id: Mapped[str] = mapped_column(String(64), index=True)
    capability: Mapped[str] = mapped_column(String(128))
    subject_type: Mapped[str] = mapped_column(String(8))  # "user" | "role"
    subject_id: Mapped[str] = mapped_column(String(64))
    granted_by: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AuditEvent(Base):
    """Who did what where, and how it was decided; metadata only."""

    __tablename__ = "audit_events"
    # A server's rows newest first, one keyset page at a time (the dashboard; kernel_0021).
    __table_args__ = (Index("ix_audit_events_guild_id_id", "guild_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, index=True
    )
    kind: Mapped[str] = mapped_column(String(32))  # tool.call, plugin.enable, grant.add ...
    actor_id: Mapped[str | None] = mapped_column(String(64))
    guild_id: Mapped[str | None] = mapped_column(String(64), index=True)
    channel_id: Mapped[str | None] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(128))
    capability: Mapped[str | None] = mapped_column(String(128))
    decision: Mapped[str | None] = mapped_column(String(16))
    reason_code: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(32))
    duration_ms: Mapped[float | None] = mapped_column(Float)
    run_id: Mapped[str | None] = mapped_column(String(64))
    step_index: Mapped[int | None] = mapped_column(Integer)
    tool_kind: Mapped[str | None] = mapped_column(String(16))  # plugin | native | direct
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    termination_reason: Mapped[str | None] = mapped_column(String(40))


class SealedSecret(Base):
    """AES-256-GCM ciphertext; the associated data binds it to (scope, owner, name)."""

    __tablename__ = "sealed_secrets"
    __table_args__ = (UniqueConstraint("scope", "owner", "name", name="uq_secret"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(32))  # e.g. "plugin_config"
    owner: Mapped[str] = mapped_column(String(160))  # e.g. "<guild>/<plugin>"
    name: Mapped[str] = mapped_column(String(128))
    key_id: Mapped[str] = mapped_column(String(32))
    nonce: Mapped[bytes] = mapped_column(LargeBinary)
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    fingerprint: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


from gigi_core.store import agent_tables as _agent_tables  # noqa: E402,F401  (registers agent tables)
from gigi_core.store import budget_tables as _budget_tables  # noqa: E402,F401  (LLM budgets)
from gigi_core.store import catalogue_tables as _catalogue_tables  # noqa: E402,F401  (model lists)
from gigi_core.store import channel_tables as _channel_tables  # noqa: E402,F401  (channel states)
from gigi_core.store import failover_tables as _failover_tables  # noqa: E402,F401  (failover lists)
from gigi_core.store import job_tables as _job_tables  # noqa: E402,F401  (background-job records)
from gigi_core.store import lease_tables as _lease_tables  # noqa: E402,F401  (shard leases)
from gigi_core.store import limit_tables as _limit_tables  # noqa: E402,F401  (rate-limit buckets)
from gigi_core.store import llm_policy_tables as _llm_policy_tables  # noqa: E402,F401  (place/role)
from gigi_core.store import llm_tables as _llm_tables  # noqa: E402,F401  (registers LLM tables on Base)
from gigi_core.store import outbox_tables as _outbox_tables  # noqa: E402,F401  (posted buttons)
from gigi_core.store import personal_tables as _personal_tables  # noqa: E402,F401  (BYOK choices)
from gigi_core.store import review_tables as _review_tables  # noqa: E402,F401  (plugin reviews)
from gigi_core.store import usage_actor_tables as _usage_actor_tables  # noqa: E402,F401  (per member)
