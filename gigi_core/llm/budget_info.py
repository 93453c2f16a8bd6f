"""A budget as stored (``BudgetInfo``) and the refusal a spent one raises
(``BudgetExhausted``): apart from ``budgets`` (the hold) to keep each module small."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gigi_core.errors import GigiError

if TYPE_CHECKING:
    from gigi_core.store.budget_tables import LlmBudget

#: A member or channel budget's scope id: each member (channel) has its own.
EVERY = "*"


class BudgetExhausted(GigiError):
    """A budget cannot cover the call's most cost; says which, how much is left, when it
    resets and what an admin can change."""

    def __init__(self, budget: BudgetInfo, most: int, left: int, resets_at: datetime) -> None:
        self.budget = budget
        self.most = most
        self.left = left
        self.resets_at = resets_at
        when = resets_at.strftime("%Y-%m-%d %H:%M UTC")
        what = f"the {budget.describe()} {budget.window} budget of {budget.show(budget.limit)}"
        tokens = budget.unit == "tokens"
        if most > budget.limit:
            message = (
                f"{what} is smaller than this one call may cost (up to {budget.show(most)}: "
                f"its prompt and output cap)"
            )
            hint = (
                f"raise it (`gigi llm budget set --guild {budget.guild_id} "
                f"{budget.selector()} --limit N`) or ask for a shorter answer"
            )
        else:
            message = (
                f"{what} is spent: "
                + (f"{left} tokens are left" if tokens else f"{budget.show(left)} is left")
                + f", this call may cost up to {most if tokens else budget.show(most)}; "
                f"it resets at {when}"
            )
            hint = (
                f"wait until {when}, or an admin can raise or reset it "
                f"(`gigi llm budget set|reset --guild {budget.guild_id} {budget.selector()}`)"
            )
        super().__init__(message, hint=hint)


@dataclass(frozen=True)
class BudgetInfo:
    """One budget as stored; ``limit`` is in ``unit`` (tokens)."""

    id: str
    guild_id: str
    scope_kind: str
    scope_id: str
    unit: str
    limit: int
    window: str
    reset_hour: int
    exempt_roles: tuple[str, ...] = ()
    exempt_admins: bool = True
    updated_by: str | None = None
    currency: str | None = None  # a money budget's; its amounts are millionths of it

    def show(self, amount: int) -> str:
        """An amount of this budget as people read it ("1200 tokens", "2.50 USD")."""
        from gigi_core.llm.budget_money import show

        return show(amount, self.unit, self.currency)

    def amount(self, value: int) -> str:
        """A figure for a list: "12,000" (tokens) or "2.50 USD" (money)."""
        return f"{value:,}" if self.unit == "tokens" else self.show(value)

    @property
    def noun(self) -> str:
        """What a list's figures count, after them: " tokens", or nothing for money."""
        return " tokens" if self.unit == "tokens" else ""

    def describe(self) -> str:
        """Who it limits, for a refusal a member reads: never more than ids."""
        if self.scope_kind == "guild":
            return "server's"
        if self.scope_id == EVERY:
            return f"per-{self.scope_kind}"
        return f"{self.scope_kind} {self.scope_id}"

    def selector(self) -> str:
        """The CLI options that name this budget."""
        scope = f"--{self.scope_kind} {self.scope_id}" if self.scope_kind != "guild" else ""
        return f"{scope} --window {self.window}".strip()

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["exempt_roles"] = list(self.exempt_roles)
        return out

    @classmethod
    def of(cls, row: LlmBudget) -> BudgetInfo:
        return cls(
            id=row.id,
            guild_id=row.guild_id,
            scope_kind=row.scope_kind,
            scope_id=row.scope_id,
            unit=row.unit,
            limit=int(row.limit),
            window=row.window,
            reset_hour=int(row.reset_hour),
            exempt_roles=tuple(str(r) for r in row.exempt_roles or ()),
            exempt_admins=bool(row.exempt_admins),
            updated_by=row.updated_by,
            currency=row.currency,
        )
