"""What a member has left on every budget that applies to them (``/quota`` on Discord and
the console): the guild's, theirs, their channel's, their roles', and the model budgets
their calls meet. The matching rule is ``budgets.applicable``'s, so what is shown is what
a call of theirs would be held against."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from gigi_core.llm.budget_store import BudgetStore
from gigi_core.llm.budgets import NOBODY, BudgetInfo, applicable, next_start, window_start
from gigi_core.store.budget_tables import LlmBudget, LlmBudgetWindow


@dataclass(frozen=True)
class Allowance:
    """One budget as one member meets it: their window's use, what is left, the reset."""

    budget: BudgetInfo
    exempt: bool  # an admin or an exempt role: their calls skip this budget
    used: int  # settled spend plus what calls in flight hold, in their window row
    left: int
    resets_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope_kind": self.budget.scope_kind,
            "scope_id": self.budget.scope_id,
            "window": self.budget.window,
            "limit": self.budget.limit,
            "exempt": self.exempt,
            "used": self.used,
            "left": self.left,
            "resets_at": self.resets_at.isoformat(),
        }


def _model_of(budget: BudgetInfo) -> tuple[str, str]:
    """The (provider, model) a model budget names; any call for others budgets."""
    if budget.scope_kind != "model":
        return "", ""
    provider, _, model = budget.scope_id.partition("/")
    return provider, model


def subject_of(budget: BudgetInfo, where: dict[str, Any]) -> str | None:
    """The window row a member's calls use on ``budget``, or None if it does not cover
    them (another member's, another channel's, a role they lack)."""
    plain = replace(budget, exempt_roles=(), exempt_admins=False)
    hit = applicable([plain], where, *_model_of(budget))
    if not hit or hit[0][1] == NOBODY:  # the allowance background work shares: not theirs
        return None
    return hit[0][1]


async def allowances(store: BudgetStore, guild_id: str, where: dict[str, Any]) -> list[Allowance]:
    """Every budget of ``guild_id`` that covers the member ``where`` names (``actor_id``,
    ``channel_id``, ``roles``, ``admin``, as ``calls.where`` builds it), read fresh."""
    await store.db.writer.drain()  # settles queued behind replies count too
    now = datetime.fromtimestamp(store.clock(), UTC)
    out: list[Allowance] = []
    async with store.db.session() as s:
        budgets = [
            BudgetInfo.of(r)
            for r in await s.scalars(
                select(LlmBudget)
                .where(LlmBudget.guild_id == guild_id)
                .order_by(LlmBudget.scope_kind, LlmBudget.scope_id, LlmBudget.window)
            )
        ]
        for b in budgets:
            subject = subject_of(b, where)
            if subject is None:
                continue
            start = window_start(b.window, b.reset_hour, now)
            w = LlmBudgetWindow
            row = (
                await s.execute(
                    select(w.spent, w.reserved).where(
                        w.budget_id == b.id,
                        w.subject == subject,
                        w.starts == int(start.timestamp()),
                    )
                )
            ).first()
            used = int(row.spent) + int(row.reserved) if row is not None else 0
            exempt = not applicable([b], where, *_model_of(b))
            out.append(
                Allowance(b, exempt, used, max(b.limit - used, 0), next_start(b.window, start))
            )
    return out
