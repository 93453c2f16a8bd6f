"""Setting, reading, resetting and removing budgets (``gigi llm budget``), and where each
stands in its current window. The hot path (holds and settling) is in ``budgets.py``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, update

from gigi_core.llm.budget_windows import WINDOWS
from gigi_core.llm.budgets import (
    EVERY,
    SCOPE_KINDS,
    UNITS,
    BudgetInfo,
    next_start,
    window_start,
)
from gigi_core.llm.records import LlmConfigError
from gigi_core.store.budget_tables import LlmBudget, LlmBudgetWindow
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from gigi_core.store.db import Database


@dataclass(frozen=True)
class BudgetStatus:
    """A budget and its current window: settled spend, held by calls in flight, left."""

    budget: BudgetInfo
    starts: datetime
    resets_at: datetime
    spent: int
    reserved: int
    subjects: int  # window rows: members or channels of an "every" budget with spend

    @property
    def left(self) -> int | None:
        """What is left (None for an "every member/channel" budget: each has its own)."""
        if self.budget.scope_id == EVERY:
            return None
        return max(self.budget.limit - self.spent - self.reserved, 0)

    def summary(self) -> dict[str, Any]:
        """Spend against the limit for a usage report: ids, counters and times only (for a
        * budget the limit is each member's or channel's, the counters their sum)."""
        b = self.budget
        return {
            "scope": b.scope_kind + (f" {b.scope_id}" if b.scope_id else ""),
            "window": b.window,
            "unit": b.unit,
            "limit": b.limit,
            "spent": self.spent,
            "reserved": self.reserved,
            "left": self.left,
            "resets_at": self.resets_at.isoformat(),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.budget.as_dict(),
            "window_starts": self.starts.isoformat(),
            "resets_at": self.resets_at.isoformat(),
            "spent": self.spent,
            "reserved": self.reserved,
            "left": self.left,
            "subjects": self.subjects,
        }


def check_scope(scope_kind: str, scope_id: str | None) -> str:
    """The stored scope id; the error says what to pass."""
    if scope_kind not in SCOPE_KINDS:
        raise LlmConfigError(
            f"unknown budget scope {scope_kind!r}", hint=f"use one of {', '.join(SCOPE_KINDS)}"
        )
    if scope_kind == "guild":
        return ""
    ident = (scope_id or "").strip()
    if not ident:
        raise LlmConfigError(
            f"a {scope_kind} budget needs an id",
            hint="pass the member, channel or role id, * for every member or channel, "
            "provider or provider/model for a model budget, or the plugin's name",
        )
    if ident == EVERY and scope_kind not in ("member", "channel"):
        raise LlmConfigError(
            f"* (each one its own budget) is for member and channel budgets, not {scope_kind}"
        )
    if len(ident) > 200:
        raise LlmConfigError(f"the {scope_kind} id is longer than 200 characters")
    return ident


def check_window(window: str) -> str:
    if window not in WINDOWS:
        raise LlmConfigError(
            f"unknown budget window {window!r}", hint=f"use one of {', '.join(WINDOWS)}"
        )
    return window


class BudgetStore:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    async def set(
        self,
        guild_id: str,
        scope_kind: str,
        scope_id: str | None,
        *,
        limit: int,
        window: str = "daily",
        unit: str = "tokens",
        reset_hour: int | None = None,
        exempt_roles: Sequence[str] | None = None,
        exempt_admins: bool | None = None,
        by: str | None = None,
        currency: str | None = None,
    ) -> BudgetInfo:
        """Create or change the budget for (guild, scope, window); its spend is kept. A
        money budget's ``limit`` is in millionths of ``currency``."""
        ident = check_scope(scope_kind, scope_id)
        check_window(window)
        if unit not in UNITS:
            raise LlmConfigError(f"unknown budget unit {unit!r}", hint="use tokens or money")
        if unit == "money" and not currency:
            raise LlmConfigError(
                "a money budget needs its profiles' currency",
                hint="set it through kernel.llm.set_budget, which reads the profiles' prices",
            )
        if limit < 0:
            raise LlmConfigError(
                f"a budget limit cannot be negative ({limit})", hint="use 0 or more"
            )
        if reset_hour is not None and not 0 <= reset_hour <= 23:
            raise LlmConfigError(
                f"reset hour {reset_hour} is not an hour of the day", hint="use 0 to 23 (UTC)"
            )
        async with self.db.session() as s:
            row = await s.scalar(
                select(LlmBudget).where(
                    LlmBudget.guild_id == guild_id,
                    LlmBudget.scope_kind == scope_kind,
                    LlmBudget.scope_id == ident,
                    LlmBudget.unit == unit,
                    LlmBudget.window == window,
                )
            )
            if row is None:
                row = LlmBudget(
                    id=uuid.uuid4().hex,
                    guild_id=guild_id,
                    scope_kind=scope_kind,
                    scope_id=ident,
                    unit=unit,
                    window=window,
                    reset_hour=0,
                    exempt_roles=[],
                    exempt_admins=True,
                )
                s.add(row)
            if row.limit is not None and row.limit != limit:  # alerts count from the new limit
                await s.execute(
                    update(LlmBudgetWindow)
                    .where(LlmBudgetWindow.budget_id == row.id)
                    .values(alerted=0)
                )
            row.limit = limit
            row.currency = currency if unit == "money" else None
            if reset_hour is not None:
                row.reset_hour = reset_hour
            if exempt_roles is not None:
                row.exempt_roles = sorted({r.strip() for r in exempt_roles if r.strip()})
            if exempt_admins is not None:
                row.exempt_admins = exempt_admins
            row.updated_by = by
            row.updated_at = utcnow()
            await s.flush()
            return BudgetInfo.of(row)

    async def find(
        self, guild_id: str, scope_kind: str, scope_id: str | None, window: str
    ) -> BudgetInfo:
        ident = check_scope(scope_kind, scope_id)
        async with self.db.session() as s:
            row = await s.scalar(
                select(LlmBudget).where(
                    LlmBudget.guild_id == guild_id,
                    LlmBudget.scope_kind == scope_kind,
                    LlmBudget.scope_id == ident,
                    LlmBudget.window == check_window(window),
                )
            )
        if row is None:
            what = scope_kind if not ident else f"{scope_kind} {ident}"
            raise LlmConfigError(
                f"guild {guild_id} has no {window} budget for {what}",
                hint=f"see `gigi llm budget show --guild {guild_id}`",
            )
        return BudgetInfo.of(row)

    async def remove(self, budget: BudgetInfo) -> None:
        async with self.db.session() as s:
            await s.execute(delete(LlmBudgetWindow).where(LlmBudgetWindow.budget_id == budget.id))
            await s.execute(delete(LlmBudget).where(LlmBudget.id == budget.id))

    async def reset(self, budget: BudgetInfo, subject: str | None = None) -> int:
        """Forget the current window's settled spend (all subjects, or one); what calls in
        flight hold stays held until they settle. Returns the rows reset."""
        starts = int(self._start(budget).timestamp())
        w = LlmBudgetWindow
        query = (
            update(w)
            .where(w.budget_id == budget.id, w.starts == starts)
            .values(spent=0, alerted=0)  # its thresholds are announced again
        )
        if subject is not None:
            query = query.where(w.subject == subject)
        async with self.db.session() as s:
            result = await s.execute(query)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def status(self, guild_id: str) -> list[BudgetStatus]:
        """Every budget of the guild with its current window's counters (summed over
        members or channels for an "every" budget)."""
        await self.db.writer.drain()  # settles queued behind replies count too
        async with self.db.session() as s:
            budgets = [
                BudgetInfo.of(r)
                for r in await s.scalars(
                    select(LlmBudget)
                    .where(LlmBudget.guild_id == guild_id)
                    .order_by(LlmBudget.scope_kind, LlmBudget.scope_id, LlmBudget.window)
                )
            ]
            out: list[BudgetStatus] = []
            for b in budgets:
                start = self._start(b)
                w = LlmBudgetWindow
                rows = (
                    await s.execute(
                        select(w.spent, w.reserved).where(
                            w.budget_id == b.id, w.starts == int(start.timestamp())
                        )
                    )
                ).all()
                out.append(
                    BudgetStatus(
                        b,
                        start,
                        next_start(b.window, start),
                        sum(int(r.spent) for r in rows),
                        sum(int(r.reserved) for r in rows),
                        len(rows),
                    )
                )
        return out

    def _start(self, budget: BudgetInfo) -> datetime:
        return window_start(
            budget.window, budget.reset_hour, datetime.fromtimestamp(self.clock(), UTC)
        )
