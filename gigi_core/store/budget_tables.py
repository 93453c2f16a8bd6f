"""LLM budgets and their per-window counters (revision kernel_0014).

A budget caps a guild's model spend for one scope (the guild, a member, a channel, a role
or a provider/model) over a daily, weekly or monthly window. Its counters live one row per
window (and per member or channel for an "every member/channel" budget), so holding a
call's most cost is one conditional UPDATE on one row: atomic on both backends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base, utcnow


class LlmBudget(Base):
    """What an admin set: who it applies to, how much, over which window, who is exempt."""

    __tablename__ = "llm_budgets"
    __table_args__ = (
        Index(
            "uq_llm_budgets_scope",
            "guild_id",
            "scope_kind",
            "scope_id",
            "unit",
            "window",
            unique=True,
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    guild_id: Mapped[str] = mapped_column(String(64))
    scope_kind: Mapped[str] = mapped_column(String(8))  # guild|member|channel|role|model
    scope_id: Mapped[str] = mapped_column(String(200))  # "" for guild, "*" for every one
    unit: Mapped[str] = mapped_column(String(8))  # tokens | money
    limit: Mapped[int] = mapped_column(BigInteger)
    window: Mapped[str] = mapped_column(String(8))  # daily | weekly | monthly
    reset_hour: Mapped[int] = mapped_column(Integer, default=0)  # UTC hour the window starts
    exempt_roles: Mapped[list[Any]] = mapped_column(JSON, default=list)
    exempt_admins: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_by: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: A money budget's currency (kernel_0018); its limit and counters are millionths of it.
    currency: Mapped[str | None] = mapped_column(String(8))


class LlmBudgetWindow(Base):
    """One window's counters of one budget: settled spend and what calls in flight hold."""

    __tablename__ = "llm_budget_windows"

    budget_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    #: The member or channel of an "every member/channel" budget; "" otherwise.
    subject: Mapped[str] = mapped_column(String(64), primary_key=True)
    starts: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # epoch seconds, UTC
    spent: Mapped[int] = mapped_column(BigInteger, default=0)
    reserved: Mapped[int] = mapped_column(BigInteger, default=0)
    #: The highest alert threshold (percent of the limit) already announced: 0, 80, 95, 100.
    alerted: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class LlmBudgetLease(Base):
    """A share of one window a process took in one write and hands out to its calls
    (revision kernel_0018); counted in the window's ``reserved`` until settled or given back.

    ``holder`` is the process's lease generation: a settle queued behind a give-back never
    touches a later lease. A crashed process's lease is reclaimed once ``expires`` passes.
    """

    __tablename__ = "llm_budget_leases"

    budget_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    subject: Mapped[str] = mapped_column(String(64), primary_key=True)
    starts: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    holder: Mapped[str] = mapped_column(String(48), primary_key=True)
    amount: Mapped[int] = mapped_column(BigInteger, default=0)
    expires: Mapped[int] = mapped_column(BigInteger)  # epoch seconds, UTC
