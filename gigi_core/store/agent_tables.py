"""Durable agent runs (revision kernel_0003). Conversation state lives only in sealed columns.

Steps and confirmations hold metadata: kinds, tool names, decisions, counts, durations.
Tool arguments needed to execute a confirmed call are sealed; their hash is keyed (HMAC).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Float, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class AgentRun(Base):
    __tablename__ = "agent_runs"
    __table_args__ = (Index("ix_agent_runs_guild_created", "guild_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    request_id: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))  # mention | slash | dm | console | direct
    actor_id: Mapped[str] = mapped_column(String(64))
    guild_id: Mapped[str] = mapped_column(String(64))
    channel_id: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(
        String(24)
    )  # running|awaiting_confirmation|done|failed|cancelled
    termination_reason: Mapped[str | None] = mapped_column(String(40))
    steps_used: Mapped[int] = mapped_column(Integer, default=0)
    tool_calls_used: Mapped[int] = mapped_column(Integer, default=0)
    llm_calls_used: Mapped[int] = mapped_column(Integer, default=0)
    tokens_used: Mapped[int] = mapped_column(Integer, default=0)
    # The process executing the run and until when (database clock, epoch seconds; revision
    # kernel_0011): every durable write of the run is conditional on ``owner``.
    owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[float | None] = mapped_column(Float)
    state_key_id: Mapped[str | None] = mapped_column(String(32))
    state_nonce: Mapped[bytes | None] = mapped_column(LargeBinary)
    state_sealed: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class AgentRunStep(Base):
    __tablename__ = "agent_run_steps"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("agent_runs.id", ondelete="CASCADE"), index=True)
    step_index: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))  # llm | tool | confirmation | answer
    tool: Mapped[str | None] = mapped_column(String(128))
    capability: Mapped[str | None] = mapped_column(String(128))
    decision: Mapped[str | None] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(32))
    duration_ms: Mapped[float | None] = mapped_column(Float)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    # why a proposed call was refused: a reason class and a name, path or capability (0013)
    reason: Mapped[str | None] = mapped_column(String(160))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AgentRunConfirmation(Base):
    __tablename__ = "agent_run_confirmations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("agent_runs.id", ondelete="CASCADE"), index=True)
    call_id: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(128))
    args_hash: Mapped[str] = mapped_column(String(64))
    manifest_version: Mapped[str] = mapped_column(String(64))
    requester_id: Mapped[str] = mapped_column(String(64))
    approver_rule: Mapped[str] = mapped_column(String(32))  # requester_or_admin
    state: Mapped[str] = mapped_column(
        String(16)
    )  # pending|approved|executing|done|rejected|expired
    decided_by: Mapped[str | None] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AgentRunContext(Base):
    """The context pack a run was given (revision kernel_0009): its trace (ids, counts and
    scores, never text) for ``/agent trace``, and its restore state for a follow-up turn."""

    __tablename__ = "agent_run_context"

    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    guild_id: Mapped[str] = mapped_column(String(64), index=True)
    actor_id: Mapped[str] = mapped_column(String(64))
    trace_json: Mapped[str] = mapped_column(Text)
    state_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
