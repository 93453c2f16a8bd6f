"""A plugin's own model allowance, kept by the kernel's budgets (``kernel.llm.plugin_budgets``).

A plugin whose work spans several model calls (the ambient persona's runs) holds the most
that work may cost on its ``plugin`` budget before it starts and settles what it used
after: the same leases, windows, refusals (``BudgetExhausted``) and admin commands as every
other budget, so the plugin keeps no counters of its own. A plugin budget covers only the
plugin's own holds; the model calls inside still meet the guild's other budgets.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError

from gigi_core.llm.budget_leases import settle

if TYPE_CHECKING:
    from gigi_core.llm.budgets import BudgetInfo
    from gigi_core.llm.service import LlmService


@dataclass
class Spend:
    """What the work really used, set once it is known; left at 0 the hold is released."""

    used: int = 0


class PluginBudgets:
    """Hold and settle on a plugin's budget; keep the budget at the plugin's setting."""

    def __init__(self, service: LlmService) -> None:
        self.service = service
        self._lock = asyncio.Lock()

    async def ensure(self, guild_id: str, plugin: str, limit: int, window: str = "daily") -> None:
        """The plugin's ``window`` budget is ``limit`` tokens (0: none); written only when
        it differs, so a plugin may call this before every hold."""
        if await self._matches(guild_id, plugin, limit, window):
            return
        async with self._lock:  # concurrent first holds create the budget once
            for attempt in range(2):
                if await self._matches(guild_id, plugin, limit, window):
                    return
                try:
                    await self._write(guild_id, plugin, limit, window)
                    return
                except IntegrityError:  # another process created it meanwhile: read again
                    self.service.cache.clear()
                    if attempt:
                        raise

    async def _mine(self, guild_id: str, plugin: str, window: str) -> BudgetInfo | None:
        for b in await self.service.budgets.for_guild(guild_id):
            if b.scope_kind == "plugin" and b.scope_id == plugin and b.window == window:
                return b
        return None

    async def _matches(self, guild_id: str, plugin: str, limit: int, window: str) -> bool:
        mine = await self._mine(guild_id, plugin, window)
        return mine.limit == limit if mine is not None else limit <= 0

    async def _write(self, guild_id: str, plugin: str, limit: int, window: str) -> None:
        if limit <= 0:
            await self.service.remove_budget(guild_id, "plugin", plugin, window)
            return
        await self.service.set_budget(
            guild_id, "plugin", plugin, limit=limit, window=window, by=f"plugin:{plugin}"
        )

    @asynccontextmanager
    async def spend(self, guild_id: str, plugin: str, most: int) -> AsyncIterator[Spend]:
        """Hold ``most`` tokens on the plugin's budgets for the work inside (raises
        ``BudgetExhausted``, holding nothing, when they do not fit); settle ``Spend.used``."""
        budgets = self.service.budgets
        holds = await budgets.reserve(guild_id, {"plugin": plugin}, "", "", most)
        spend = Spend()
        try:
            yield spend
        finally:
            if holds:
                rows = budgets.settle_rows(holds, spend.used)
                await self.service.kernel.db.writer.write(lambda conn: settle(conn, rows))
