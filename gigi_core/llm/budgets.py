"""Budgets every model call is held against: reserve the most it may cost, settle after.

Before a provider call ``Budgets.reserve`` holds the call's most cost (its prompt's
estimated tokens plus its output cap) on every budget that applies to it. The holds come
from this process's lease on each window (``budget_leases``): a share of the window's room
taken in one write transaction, for every window of the call or none, by one conditional
UPDATE per window (``spent + reserved + share <= limit``), in a fixed order (budget id,
subject). SQLite has one writer at a time and PostgreSQL re-reads the condition on the row
as the earlier writer left it, so processes never lease more than a budget between them,
and a process never holds more than its leases: N concurrent calls, in one process or
many, never hold more than the budget. A call that finds room in its leases takes no
write at all. After the call the hold is settled with what the provider reported, in the
usage row's own write (``UsageWrite.settles``); a failed or cancelled call gives its hold
back to the lease. Leases go back when idle and at close; a crashed process's expire.

Budget definitions are read through ``LlmCache`` (``("budgets", guild)``), so a change
made here applies at once and one made by another process within the cache's seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError

from gigi_core.llm.budget_info import EVERY, BudgetExhausted, BudgetInfo
from gigi_core.llm.budget_leases import (
    IDLE_SECONDS,
    LEASE_SECONDS,
    RENEW_BELOW,
    Lease,
    Reclaimed,
    give_back,
    renew,
    share,
    take,
)
from gigi_core.llm.budget_windows import next_start, window_start
from gigi_core.llm.records import LlmConfigError
from gigi_core.store.budget_tables import LlmBudget

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from gigi_core.llm.cache import LlmCache
    from gigi_core.llm.channel_policy import Place
    from gigi_core.store.db import Database

log = logging.getLogger(__name__)

SCOPE_KINDS: tuple[str, ...] = ("guild", "member", "channel", "role", "model", "plugin")
UNITS: tuple[str, ...] = ("tokens", "money")
#: The window row of an "every" budget that calls with no member (no channel) share.
NOBODY = "-"
DEADLOCK_RETRIES = 4
TOP_UP_TASK = "gigi-llm-budget-top-up"


# -- which budgets apply -----------------------------------------------------------------


@dataclass(frozen=True)
class Hold:
    """Tokens held on one window row of one budget, settled after the call."""

    budget_id: str
    subject: str
    starts: int
    amount: int
    guild_id: str = ""
    limit: int = 0  # the budget's limit when held: what the alert thresholds are shares of
    lease: str = ""  # the lease generation it was held from (``budget_leases``)
    unit: str = "tokens"  # money: ``amount`` is millionths of the budget's currency


def applicable(
    budgets: Sequence[BudgetInfo], where: dict[str, Any], provider: str, model: str
) -> list[tuple[BudgetInfo, str]]:
    """The budgets (with the window row's subject) that cover a call: the guild's, the
    member's, the channel's, the member's roles', the provider's or model's; minus those
    the member is exempt from (admins, exempt roles).

    A call no member made (background work) or made for no channel is covered by the
    guild's and model budgets, and by an "every member" ("every channel") budget as one
    more member (channel), ``NOBODY``; a budget naming one member, channel or role covers
    only calls that name it (``docs/llm-admin.md#who-a-budget-covers``). Channel budgets
    are matched against the call's place chain: a thread spends its channel's (forum's)."""
    actor, channel = where.get("actor_id"), where.get("channel_id")
    channels, parent = channel_chain(channel, where.get("places") or ())
    roles: frozenset[str] = where.get("roles") or frozenset()
    admin = bool(where.get("admin"))
    plugin = where.get("plugin")
    out: list[tuple[BudgetInfo, str]] = []
    for b in budgets:
        if admin and b.exempt_admins:
            continue
        if (b.scope_kind == "plugin") != bool(plugin) or (plugin and b.scope_id != plugin):
            continue  # a plugin's budget covers its own holds (``budget_port``), only them
        if b.exempt_roles and not roles.isdisjoint(b.exempt_roles):
            continue
        kind, scope = b.scope_kind, b.scope_id
        subject = ""
        if kind == "guild":
            pass
        elif kind == "member":
            if scope == EVERY:  # calls no member made share one allowance: "-"
                subject = actor or NOBODY
            elif scope != actor:
                continue
        elif kind == "channel":
            if scope == EVERY:  # one allowance per channel, its threads' calls included
                subject = parent or NOBODY  # calls made for no channel share "-"
            elif scope not in channels:
                continue
        elif kind == "role":
            if scope not in roles:
                continue
        elif kind == "model":
            if scope not in (provider, f"{provider}/{model}"):
                continue
        elif kind != "plugin":
            continue
        out.append((b, subject))
    out.sort(key=lambda pair: (pair[0].id, pair[1]))  # one lock order in every process
    return out


def channel_chain(
    channel: str | None, places: Sequence[Place]
) -> tuple[frozenset[str], str | None]:
    """The channel ids a call's channel budgets match (its channel, and for a thread the
    thread and its channel or forum) and the one an "every channel" budget counts it
    under: the thread's parent, so opening threads gives no fresh allowance."""
    chain = [p.id for p in places if p.kind in ("thread", "channel", "forum")]
    parent = next((p.id for p in places if p.kind in ("channel", "forum")), None)
    named = frozenset(c for c in (channel, *chain) if c)
    return named, parent or channel


# -- settling ----------------------------------------------------------------------------


def _deadlock(exc: DBAPIError) -> bool:
    return getattr(exc.orig, "sqlstate", None) in ("40P01", "40001")


class Budgets:
    """``kernel.llm``'s budget keeper: which budgets a call meets, its holds from this
    process's leases (``budget_leases``), its settling."""

    def __init__(
        self, db: Database, cache: LlmCache, clock: Callable[[], float] = time.time
    ) -> None:
        self.db = db
        self.cache = cache
        self.clock = clock
        self.leases: dict[tuple[str, str, int], Lease] = {}
        self._process = uuid.uuid4().hex[:24]
        self._generation = 0
        self._lock = asyncio.Lock()
        self._sweeper: asyncio.Task[None] | None = None
        self._topping: asyncio.Task[None] | None = None  # the background take, if any
        self._dry: set[tuple[str, str, int]] = set()  # windows a top-up found without room

    async def for_guild(self, guild_id: str) -> tuple[BudgetInfo, ...]:
        """The guild's budgets, cached with the other LLM facts."""
        return await self.cache.fetch(  # type: ignore[no-any-return]
            ("budgets", guild_id), lambda: self.read(guild_id)
        )

    async def read(self, guild_id: str) -> tuple[BudgetInfo, ...]:
        async with self.db.session() as s:
            rows = await s.scalars(select(LlmBudget).where(LlmBudget.guild_id == guild_id))
            return tuple(BudgetInfo.of(r) for r in rows)

    async def reserve(
        self,
        guild_id: str,
        where: dict[str, Any],
        provider: str,
        model: str,
        most: int,
        money: int | None = None,
    ) -> list[Hold]:
        """Hold ``most`` tokens (``money``, in millionths, on money budgets) on every budget
        that covers the call, or raise ``BudgetExhausted`` naming the first that cannot
        (holding nothing)."""
        budgets = await self.for_guild(guild_id)
        if not budgets:
            return []
        covering = applicable(budgets, where, provider, model)
        if not covering:
            return []
        amounts = []
        for budget, _ in covering:
            if budget.unit == "money" and money is None:
                raise LlmConfigError(
                    f"the {budget.describe()} {budget.window} money budget cannot count this "
                    f"call: its model profile declares no prices",
                    hint="set them with `gigi llm profile set ... --input-price P "
                    "--output-price Q` (per million tokens; on Discord the input_price and "
                    "output_price options), or remove the money budget",
                )
            amounts.append(money if budget.unit == "money" else most)
        now = self.clock()
        today = datetime.fromtimestamp(now, UTC)
        starts = [window_start(b.window, b.reset_hour, today) for b, _ in covering]
        keys = [
            (b.id, subject, int(start.timestamp()))
            for (b, subject), start in zip(covering, starts, strict=True)
        ]
        held = self._from_leases(covering, keys, amounts, now)
        if held is not None:
            self._top_up(covering, keys, starts, amounts)
            return held
        async with self._lock:  # one take at a time: the calls behind it find its share
            now = self.clock()
            held = self._from_leases(covering, keys, amounts, now)
            if held is None:
                self._dry.difference_update(keys)
                await self._take(covering, keys, starts, amounts, now)
                held = self._from_leases(covering, keys, amounts, now)
        if held is None:  # the limit changed while the share was taken: go again
            return await self.reserve(guild_id, where, provider, model, most, money)
        return held

    def _low(
        self, covering: list[tuple[BudgetInfo, str]], keys: list[Any], amounts: list[Any]
    ) -> bool:
        """Whether a lease of the call is down to less than half a share (and its window
        had room the last time this process asked)."""
        for (budget, _), key, most in zip(covering, keys, amounts, strict=True):
            lease = self.leases.get(key)
            if key in self._dry or lease is None:
                continue
            if lease.free < max(most, share(budget.limit, most) // 2):
                return True
        return False

    def _top_up(
        self,
        covering: list[tuple[BudgetInfo, str]],
        keys: list[tuple[str, str, int]],
        starts: list[datetime],
        amounts: list[Any],
    ) -> None:
        """Takes the next share in the background before a lease runs out, so a call rarely
        waits for a lease write (what a budget adds to a turn's p95). A window that gave
        nothing is left alone ("dry") until a call has to wait for it again."""
        if (self._topping is not None and not self._topping.done()) or not self._low(
            covering, keys, amounts
        ):
            return

        async def top_up() -> None:
            async with self._lock:
                if not self._low(covering, keys, amounts):
                    return  # a waiting call took a share meanwhile
                before = [self.leases[k].granted if k in self.leases else 0 for k in keys]
                try:
                    await self._take(covering, keys, starts, amounts, self.clock())
                except BudgetExhausted:
                    self._dry.update(keys)
                    return
                for key, had in zip(keys, before, strict=True):
                    lease = self.leases.get(key)
                    if lease is None or lease.granted == had:
                        self._dry.add(key)

        def done(task: asyncio.Task[None]) -> None:
            if not task.cancelled() and task.exception() is not None:
                log.warning("llm budget top-up failed: %s", type(task.exception()).__name__)

        self._topping = asyncio.get_running_loop().create_task(top_up(), name=TOP_UP_TASK)
        self._topping.add_done_callback(done)

    def _from_leases(
        self,
        covering: list[tuple[BudgetInfo, str]],
        keys: list[tuple[str, str, int]],
        amounts: list[Any],
        now: float,
    ) -> list[Hold] | None:
        """The holds, taken from this process's leases without a write, if every lease has
        room, is not near its expiry and was taken under the budget's current limit."""
        leases = [self.leases.get(key) for key in keys]
        for (budget, _), lease, most in zip(covering, leases, amounts, strict=True):
            if (
                lease is None
                or lease.free < most
                or lease.limit != budget.limit
                or lease.expires - now < RENEW_BELOW
            ):
                return None
        tick = time.monotonic()
        holds = []
        for (budget, _), key, lease, most in zip(covering, keys, leases, amounts, strict=True):
            assert lease is not None
            lease.inuse += most
            lease.used_at = tick
            holds.append(Hold(*key, most, budget.guild_id, budget.limit, lease.holder, budget.unit))
        return holds

    async def _take(
        self,
        covering: list[tuple[BudgetInfo, str]],
        keys: list[tuple[str, str, int]],
        starts: list[datetime],
        amounts: list[int],
        now: float,
    ) -> None:
        """One write extending every lease the call lacks room on (and renewing them);
        raises ``BudgetExhausted`` for the first window without room for the call. A lease
        another process reclaimed is dropped and the call takes a fresh one."""
        rows = []
        for (budget, _), key, most in zip(covering, keys, amounts, strict=True):
            lease = self.leases.get(key)
            if lease is None:
                self._generation += 1
                lease = self.leases[key] = Lease(
                    f"{self._process}.{self._generation}", budget.limit
                )
            need = max(most - lease.free, 0)
            rows.append(
                {
                    "b_id": key[0],
                    "b_subject": key[1],
                    "b_starts": key[2],
                    "b_lease": lease.holder,
                    "b_limit": budget.limit,
                    "b_need": need,
                    "b_want": max(need, share(budget.limit, most) - lease.free),
                    "b_expires": int(now) + LEASE_SECONDS,
                    "b_now": int(now),
                    "b_stored": lease.stored,
                }
            )
        result = await self._write(take(rows))
        if isinstance(result, Reclaimed):  # its room went back to the window: not ours now
            for index in result.indexes:
                self._drop(keys[index], rows[index]["b_lease"])
            await self._take(covering, keys, starts, amounts, now)
            return
        if isinstance(result, tuple):
            index, used = result
            budget = covering[index][0]
            lease = self.leases[keys[index]]
            left = max(budget.limit - used, 0) + max(lease.free, 0)
            resets = next_start(budget.window, starts[index])
            raise BudgetExhausted(budget, amounts[index], left, resets)
        for (budget, _), key, amount in zip(covering, keys, result, strict=True):
            lease = self.leases[key]
            lease.granted += amount
            lease.limit = budget.limit
            lease.expires = now + LEASE_SECONDS
            lease.stored = True
        self._sweep()

    def _drop(self, key: tuple[str, str, int], holder: str) -> None:
        """Forgets a lease whose row is gone; calls still holding from it settle without it
        (their holds name its generation, which no new lease reuses)."""
        lease = self.leases.get(key)
        if lease is not None and lease.holder == holder:
            del self.leases[key]
            log.warning("llm budget lease %s was reclaimed by another process", holder)

    async def _write(self, fn: Callable[[Connection], Any]) -> Any:
        """A lease write, retried after a deadlock; a caller cancelled while it commits
        does not cancel it (the share it took still lands in the lease)."""
        for attempt in range(DEADLOCK_RETRIES):
            try:
                return await asyncio.shield(self.db.writer.write(fn))
            except DBAPIError as exc:  # two processes' batches locked rows in turn
                if not _deadlock(exc) or attempt == DEADLOCK_RETRIES - 1:
                    raise
                log.info("llm budget lease retried after a deadlock")
        raise AssertionError("unreachable")

    def settle_rows(
        self, holds: Sequence[Hold], used: int | None, money: int | None = None
    ) -> list[dict[str, Any]]:
        """The settle parameters for ``holds`` (``budget_leases.settle``), and the leases
        get back what the call did not use. ``used``: the tokens the provider reported
        (None: it said nothing, so the held amount is charged; 0: a failed call)."""
        tick = time.monotonic()
        rows = []
        for h in holds:
            spent = money if h.unit == "money" else used  # money: what the tokens cost
            charged = h.amount if spent is None else spent
            moved = min(charged, h.amount)  # from the lease to the spend
            lease = self.leases.get((h.budget_id, h.subject, h.starts))
            if lease is not None and lease.holder == h.lease:
                lease.inuse -= h.amount
                # a call that cost more than it held is paid from the lease's free room too,
                # so the window's spent + reserved stays within the limit where it can
                moved = min(charged, max(lease.free, 0))
                lease.granted -= moved
                lease.used_at = tick
            rows.append(
                {
                    "b_id": h.budget_id,
                    "b_subject": h.subject,
                    "b_starts": h.starts,
                    "b_lease": h.lease,
                    "b_held": moved,
                    "b_used": charged,
                    "b_limit": h.limit,
                    "b_guild": h.guild_id,
                }
            )
        return rows

    async def give_back(self, *, idle_for: float = 0.0) -> int:
        """Returns this process's leases no call used for ``idle_for`` seconds (all of an
        unused lease, the free part of one in use); the number of leases touched."""
        async with self._lock:  # never while a take for the same window is in flight
            return await self._give_back(idle_for)

    async def _give_back(self, idle_for: float) -> int:
        tick = time.monotonic()
        rows = []
        for key, lease in list(self.leases.items()):
            if tick - lease.used_at < idle_for:
                continue
            row = {"b_id": key[0], "b_subject": key[1], "b_starts": key[2], "b_lease": lease.holder}
            if lease.inuse == 0:
                del self.leases[key]  # a new lease for this window gets a new generation
                rows.append({**row, "b_give": None})
            elif lease.free > 0:
                rows.append({**row, "b_give": lease.free})
                lease.granted = lease.inuse
        if rows:
            await self._write(give_back(rows))
        return len(rows)

    def _sweep(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweeping())

    async def _sweeping(self) -> None:
        """Gives idle leases back and renews those calls still hold, until none is left."""
        while self.leases:
            await asyncio.sleep(IDLE_SECONDS / 2)
            try:
                await self.give_back(idle_for=IDLE_SECONDS)
                await self._renew()
            except Exception:  # the next round tries again; close() gives back the rest
                log.exception("llm budget leases could not be given back")

    async def _renew(self) -> None:
        """Pushes back the expiry of leases calls hold (a long call must not lose its lease);
        a lease whose row another process reclaimed is dropped, not renewed."""
        async with self._lock:  # never while a take for the same window is in flight
            await self._renew_due()

    async def _renew_due(self) -> None:
        now = self.clock()
        due = [(k, lease) for k, lease in self.leases.items() if lease.expires - now < RENEW_BELOW]
        if not due:
            return
        rows = [
            {
                "b_id": k[0],
                "b_subject": k[1],
                "b_starts": k[2],
                "b_lease": lease.holder,
                "b_expires": int(now) + LEASE_SECONDS,
            }
            for k, lease in due
        ]
        gone = set(await self._write(renew(rows)))
        for index, (key, lease) in enumerate(due):
            if index in gone:
                self._drop(key, lease.holder)
            else:
                lease.expires = now + LEASE_SECONDS

    async def close(self) -> None:
        """Before the database closes: every lease goes back (queued settles first)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self._topping is not None:  # its share lands in a lease, then goes back below
            await asyncio.wait([self._topping])
        await self.db.writer.drain()
        await self.give_back()
