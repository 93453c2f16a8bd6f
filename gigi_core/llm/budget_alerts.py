"""Soft budget alerts: a notice to the guild's staff channel when a settled call takes a
budget's window past 80 %, 95 % or 100 % of its limit, once per threshold per window.

"Once" holds across concurrent calls and processes: the settle's own transaction claims the
threshold with one conditional UPDATE on the window row (``alerted < threshold``), so of
many calls crossing it together exactly one gets the row back. A call that jumps several
thresholds announces only the highest. The notice is metadata only: the budget, its
window, the percentage, the counters and the reset time; never a prompt or a reply.

Where it goes is the ``staff_channel`` of the built-in ``gigi`` plugin's guild config; with
none set nothing is posted (``gigi llm budget show`` says so).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import BigInteger, bindparam, case, update

from gigi_core.llm.budgets import EVERY, NOBODY, BudgetInfo, next_start
from gigi_core.store.budget_tables import LlmBudgetWindow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from gigi_core.kernel import Kernel
    from gigi_core.llm.budgets import Budgets

log = logging.getLogger(__name__)

THRESHOLDS: tuple[int, ...] = (80, 95, 100)  # percent of the limit
CONFIG_KEY = "staff_channel"  # in the built-in ``gigi`` plugin's guild config

_W = LlmBudgetWindow.__table__
_LIMIT = bindparam("b_limit", type_=BigInteger)
_REACHED = case(
    *((_W.c.spent * 100 >= _LIMIT * pct, pct) for pct in reversed(THRESHOLDS[1:])),
    else_=THRESHOLDS[0],
)
#: Claims the highest threshold the window's spend has reached, if not announced yet.
CLAIM = (
    update(_W)
    .where(
        (_W.c.budget_id == bindparam("b_id"))
        & (_W.c.subject == bindparam("b_subject"))
        & (_W.c.starts == bindparam("b_starts"))
        & (_W.c.spent > 0)
        & (_W.c.spent * 100 >= _LIMIT * THRESHOLDS[0])
        & (_W.c.alerted < _REACHED)
    )
    .values(alerted=_REACHED)
    .returning(_W.c.alerted, _W.c.spent, _W.c.reserved)
)


@dataclass(frozen=True)
class Alert:
    """One claimed threshold of one window row: what the staff notice says."""

    guild_id: str
    budget_id: str
    subject: str
    starts: int
    percent: int
    spent: int
    reserved: int
    limit: int


def claim(
    conn: Connection, settles: Sequence[dict[str, Any]], due: Collection[int] | None = None
) -> list[tuple[int, Alert]]:
    """In the settle's transaction: the thresholds these settles took their windows past,
    each claimed for this transaction alone, with the index of its settle row. ``due``:
    the rows whose window the settle saw past an unannounced threshold (the others skip)."""
    out: list[tuple[int, Alert]] = []
    for index, row in enumerate(settles):
        if due is not None and index not in due:
            continue
        if not row.get("b_used") or not row.get("b_limit") or not row.get("b_guild"):
            continue  # nothing was spent (a release), or a hold from before alerts existed
        got = conn.execute(CLAIM, row).first()
        if got is not None:
            alert = Alert(
                row["b_guild"],
                row["b_id"],
                row["b_subject"],
                int(row["b_starts"]),
                int(got.alerted),
                int(got.spent),
                int(got.reserved),
                int(row["b_limit"]),
            )
            out.append((index, alert))
    return out


def notice(budget: BudgetInfo, alert: Alert) -> str:
    """The staff notice: ids, counters and times only."""
    start = datetime.fromtimestamp(alert.starts, UTC)
    resets = next_start(budget.window, start).strftime("%Y-%m-%d %H:%M UTC")
    who = budget.describe()
    if budget.scope_id == EVERY and alert.subject == NOBODY:
        who = f"per-{budget.scope_kind} (calls with no {budget.scope_kind})"
    elif budget.scope_id == EVERY and alert.subject:
        who = f"{budget.scope_kind} {alert.subject}'s (per-{budget.scope_kind})"
    reached = "is used up" if alert.percent >= 100 else f"has reached {alert.percent} %"
    return (
        f"LLM budget alert: the {who} {budget.window} budget {reached} of its "
        f"{alert.limit} tokens ({alert.spent} spent, {alert.reserved} more held for calls "
        f"under way); the window resets at {resets}. "
        f"See `gigi llm budget show --guild {budget.guild_id}`."
    )


async def staff_channel(kernel: Kernel, guild_id: str) -> str | None:
    """The guild's staff channel from the ``gigi`` plugin config, or None when unset."""
    config = await kernel.plugin_config(guild_id, "gigi")
    value = config.get(CONFIG_KEY) if isinstance(config, dict) else getattr(config, CONFIG_KEY)
    text = str(value or "").strip()
    return text or None


class BudgetAlerts:
    """Posts claimed alerts in the background: a notice never delays or fails a reply."""

    #: How long the kernel's close waits for notices still being posted before it gives up.
    close_seconds = 5.0

    def __init__(self, kernel: Kernel, budgets: Budgets) -> None:
        self.kernel = kernel
        self.budgets = budgets
        self._tasks: set[asyncio.Task[None]] = set()
        #: Notices claimed but not posted (no staff channel, no surface, posting failed).
        self.undelivered = 0

    def announce(self, alerts: Sequence[Alert]) -> None:
        """Called once the settle committed: post each claimed alert."""
        if not alerts:
            return
        task = asyncio.get_running_loop().create_task(self._post_all(list(alerts)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for the notices being posted (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        """At shutdown: the notices being posted get ``close_seconds`` to go out (a threshold
        crossed just before is not lost); those still stuck are given up and counted."""
        try:
            await asyncio.wait_for(self.drain(), self.close_seconds)
        except TimeoutError:
            pending = list(self._tasks)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _post_all(self, alerts: list[Alert]) -> None:
        for index, alert in enumerate(alerts):
            try:
                await self._post(alert)
            except asyncio.CancelledError:  # the kernel closed before it went out
                self.undelivered += len(alerts) - index
                log.warning(
                    "llm budget alert not posted: the kernel closed first (guild=%s percent=%d)",
                    alert.guild_id,
                    alert.percent,
                )
                raise
            except Exception as exc:  # the claim stands: logged and counted, never retried
                self.undelivered += 1
                log.warning(
                    "llm budget alert not posted: guild=%s budget=%s percent=%d (%s)",
                    alert.guild_id,
                    alert.budget_id,
                    alert.percent,
                    type(exc).__name__,
                )

    async def _post(self, alert: Alert) -> None:
        from gigi_core.events import OutboundMessage

        budgets = await self.budgets.read(alert.guild_id)
        budget = next((b for b in budgets if b.id == alert.budget_id), None)
        if budget is None:  # removed since
            return
        channel = await staff_channel(self.kernel, alert.guild_id)
        if channel is None:
            self.undelivered += 1
            log.info(
                "llm budget alert not posted: guild %s has no staff channel (percent=%d)",
                alert.guild_id,
                alert.percent,
            )
            return
        message = OutboundMessage(alert.guild_id, channel, notice(budget, alert))
        await self.kernel.outbox.post(message, plugin="gigi")
        log.info(
            "llm budget alert posted: guild=%s budget=%s percent=%d",
            alert.guild_id,
            alert.budget_id,
            alert.percent,
        )
