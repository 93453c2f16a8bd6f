"""``kernel.llm``'s budget commands (mixed into ``LlmService``): set, show, reset, remove.

Kept apart so the service module stays the list of calls; the counting is in ``budgets``
and ``budget_store`` (``docs/llm-admin.md#budgets``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from gigi_core.llm import calls
from gigi_core.llm.records import Owner

if TYPE_CHECKING:
    from gigi_core.llm.budget_info import BudgetInfo
    from gigi_core.llm.budget_quota import Allowance
    from gigi_core.llm.budget_store import BudgetStatus
    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.records import Resolution
    from gigi_core.llm.service import LlmService
    from gigi_core.policy.actor import Actor


class BudgetAdmin:
    """What admins do with budgets; every change clears the resolution cache and is audited."""

    async def set_budget(
        self, guild_id: str, scope_kind: str, scope_id: str | None, **options: Any
    ) -> BudgetInfo:
        """Create or change a budget (``BudgetStore.set``); calls here meet it at once. A
        money budget counts in its profiles' currency and refuses profiles without prices."""
        llm = self._llm
        if isinstance(options.get("limit"), str):  # as typed: "200000" or "2.50"
            from gigi_core.llm.budget_money import parse_limit

            options["limit"] = parse_limit(options["limit"], options.get("unit", "tokens"))
        if options.get("unit") == "money":
            from gigi_core.llm.budget_money import money_currency

            ident = (scope_id or "").strip()
            options["currency"] = await money_currency(llm.profiles, guild_id, scope_kind, ident)
        budget = await llm.budget_store.set(guild_id, scope_kind, scope_id, **options)
        llm._changed()
        await llm._audit("llm.budget.set", Owner.guild(guild_id), options.get("by"), budget.id)
        return budget

    async def budget_status(self, guild_id: str) -> list[BudgetStatus]:
        """Each budget's window; this process's unused leases go back first, so "held" is
        what calls in flight (and other processes' leases) hold."""
        llm = self._llm
        await llm.budgets.give_back()
        return await llm.budget_store.status(guild_id)

    async def quota(
        self,
        guild_id: str,
        actor: Actor | str | None,
        channel_id: str | None = None,
        places: Sequence[Place] = (),
    ) -> list[Allowance]:
        """What ``actor`` has left on every budget that covers them (``budget_quota``);
        ``places``: the channel's place chain (a thread counts under its channel)."""
        from gigi_core.llm.budget_quota import allowances

        llm = self._llm
        where = calls.where(None, actor, guild_id, channel_id, places)
        await llm.budgets.give_back()  # "left" counts no share this process holds unused
        return await allowances(llm.budget_store, guild_id, where)

    async def reset_budget(
        self,
        guild_id: str,
        scope_kind: str,
        scope_id: str | None,
        window: str,
        *,
        subject: str | None = None,
        by: str | None = None,
    ) -> int:
        """Zero the current window's spend (what calls in flight hold stays held)."""
        llm = self._llm
        budget = await llm.budget_store.find(guild_id, scope_kind, scope_id, window)
        rows = await llm.budget_store.reset(budget, subject)
        await llm._audit("llm.budget.reset", Owner.guild(guild_id), by, budget.id)
        return rows

    async def remove_budget(
        self,
        guild_id: str,
        scope_kind: str,
        scope_id: str | None,
        window: str,
        *,
        by: str | None = None,
    ) -> BudgetInfo:
        llm = self._llm
        budget = await llm.budget_store.find(guild_id, scope_kind, scope_id, window)
        await llm.budget_store.remove(budget)
        llm._changed()
        await llm._audit("llm.budget.remove", Owner.guild(guild_id), by, budget.id)
        return budget

    async def _budgeted(self, resolution: Resolution, where: dict[str, Any]) -> bool:
        """Whether the guild has budgets this call may meet; sets ``where["budget_guild"]``.

        A call billed to the member's own key spends none of the guild's budgets.
        """
        llm = self._llm
        guild = where["guild_id"] or (
            resolution.owner.id if resolution.owner.type == "guild" else None
        )
        if guild is None or resolution.owner.type == "user":
            return False
        if not await llm.budgets.for_guild(guild):
            return False
        where["budget_guild"] = guild
        return True

    @property
    def _llm(self) -> LlmService:
        return cast("LlmService", self)
