"""Budgets every model call is held against: reserve the most it may cost, settle after.

Before a provider call ``Budgets.reserve`` holds the call's most cost (its prompt's
estimated tokens plus its output cap) on every budget that applies to it, in one write
transaction: per budget one conditional UPDATE (``spent + reserved + most <= limit``) on
the window's row, in a fixed order (budget id, subject), and, if any does not fit, the
holds already taken are given back in that same transaction before it commits. SQLite has
one writer at a time and PostgreSQL re-reads the condition on the row as the earlier
writer left it, so concurrent calls, in one process or many, never hold more than a budget
between them. After the call the hold is settled with what the provider reported, in the
usage row's own write (``UsageWrite.settles``); a failed or cancelled call gives it back.
A hold a crashed process never settled stays until its window ends: never an overspend.

Budget definitions are read through ``LlmCache`` (``("budgets", guild)``), so a change
made here applies at once and one made by another process within the cache's seconds.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.exc import DBAPIError

from gigi_core.errors import ConfigError, GigiError
from gigi_core.store.budget_tables import LlmBudget, LlmBudgetWindow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from gigi_core.llm.cache import LlmCache
    from gigi_core.llm.types import ChatRequest, EmbeddingRequest
    from gigi_core.store.db import Database

log = logging.getLogger(__name__)

SCOPE_KINDS: tuple[str, ...] = ("guild", "member", "channel", "role", "model")
UNITS: tuple[str, ...] = ("tokens", "money")
EVERY = "*"  # a member or channel budget's scope id: each member (channel) has its own
#: A generous estimate of a prompt's tokens: one per this many bytes of its JSON.
BYTES_PER_TOKEN = 3
OUTPUT_ENV = "GIGI_LLM_BUDGET_OUTPUT_TOKENS"
#: The output cap a budgeted call gets when it sets none: without a cap its cost is unbounded.
DEFAULT_OUTPUT_TOKENS = 4096
DEADLOCK_RETRIES = 4


class BudgetExhausted(GigiError):
    """A budget cannot cover the call's most cost; says which, how much is left, when it
    resets and what an admin can change."""

    def __init__(self, budget: BudgetInfo, most: int, left: int, resets_at: datetime) -> None:
        self.budget = budget
        self.most = most
        self.left = left
        self.resets_at = resets_at
        when = resets_at.strftime("%Y-%m-%d %H:%M UTC")
        what = f"the {budget.describe()} {budget.window} budget of {budget.limit} tokens"
        if most > budget.limit:
            message = (
                f"{what} is smaller than this one call may cost (up to {most} tokens: its "
                f"prompt and output cap)"
            )
            hint = (
                f"raise it (`gigi llm budget set --guild {budget.guild_id} "
                f"{budget.selector()} --limit N`) or ask for a shorter answer"
            )
        else:
            message = (
                f"{what} is spent: {left} tokens are left, this call may cost up to {most}; "
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
        )


# -- windows -----------------------------------------------------------------------------


def window_start(window: str, reset_hour: int, now: datetime) -> datetime:
    """The start of the window ``now`` falls in: the last reset at ``reset_hour`` UTC of a
    day (daily), a Monday (weekly) or the 1st of a month (monthly)."""
    now = now.astimezone(UTC)
    start = now.replace(hour=reset_hour, minute=0, second=0, microsecond=0)
    if window == "daily":
        return start if start <= now else start - timedelta(days=1)
    if window == "weekly":
        start -= timedelta(days=start.weekday())
        return start if start <= now else start - timedelta(days=7)
    start = start.replace(day=1)
    if start <= now:
        return start
    return _add_month(start, -1)


def next_start(window: str, start: datetime) -> datetime:
    """When the window that began at ``start`` ends (the next reset)."""
    if window == "daily":
        return start + timedelta(days=1)
    if window == "weekly":
        return start + timedelta(days=7)
    return _add_month(start, 1)


def _add_month(when: datetime, months: int) -> datetime:
    index = when.year * 12 + when.month - 1 + months
    return when.replace(year=index // 12, month=index % 12 + 1)


# -- what a call may cost ----------------------------------------------------------------


def output_cap() -> int:
    """``GIGI_LLM_BUDGET_OUTPUT_TOKENS`` (default 4096); the error names the variable."""
    raw = (os.environ.get(OUTPUT_ENV) or "").strip()
    if not raw:
        return DEFAULT_OUTPUT_TOKENS
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(
            f"{OUTPUT_ENV}: {raw!r} is not a positive number of tokens",
            hint=f"unset {OUTPUT_ENV} or set it to e.g. 4096",
        )
    return int(raw)


def most_tokens(request: ChatRequest | EmbeddingRequest) -> int:
    """The most tokens the call may cost: its prompt, estimated on the high side from its
    JSON (messages, tools, output schema), plus its output cap (none for embeddings)."""
    from gigi_core.llm.types import EmbeddingRequest

    if isinstance(request, EmbeddingRequest):
        size = sum(len(t.encode()) + 4 for t in request.inputs)
        return max(1, math.ceil(size / BYTES_PER_TOKEN))
    prompt = request.model_dump_json(include={"messages", "tools", "structured_output"})
    output = request.max_output_tokens or output_cap()
    return math.ceil(len(prompt.encode()) / BYTES_PER_TOKEN) + output


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


def applicable(
    budgets: Sequence[BudgetInfo], where: dict[str, Any], provider: str, model: str
) -> list[tuple[BudgetInfo, str]]:
    """The budgets (with the window row's subject) that cover a call: the guild's, the
    member's, the channel's, the member's roles', the provider's or model's; minus those
    the member is exempt from (admins, exempt roles)."""
    actor, channel = where.get("actor_id"), where.get("channel_id")
    roles: frozenset[str] = where.get("roles") or frozenset()
    admin = bool(where.get("admin"))
    out: list[tuple[BudgetInfo, str]] = []
    for b in budgets:
        if b.unit != "tokens" or (admin and b.exempt_admins):
            continue
        if b.exempt_roles and not roles.isdisjoint(b.exempt_roles):
            continue
        kind, scope = b.scope_kind, b.scope_id
        subject = ""
        if kind == "guild":
            pass
        elif kind == "member" and actor:
            if scope == EVERY:
                subject = actor
            elif scope != actor:
                continue
        elif kind == "channel" and channel:
            if scope == EVERY:
                subject = channel
            elif scope != channel:
                continue
        elif kind == "role":
            if scope not in roles:
                continue
        elif kind == "model":
            if scope not in (provider, f"{provider}/{model}"):
                continue
        else:
            continue
        out.append((b, subject))
    out.sort(key=lambda pair: (pair[0].id, pair[1]))  # one lock order in every process
    return out


# -- the statements ----------------------------------------------------------------------

_W = LlmBudgetWindow.__table__
_KEY = (
    (_W.c.budget_id == bindparam("b_id"))
    & (_W.c.subject == bindparam("b_subject"))
    & (_W.c.starts == bindparam("b_starts"))
)
_HOLD = (
    update(_W)
    .where(_KEY & (_W.c.spent + _W.c.reserved + bindparam("b_most") <= bindparam("b_limit")))
    .values(reserved=_W.c.reserved + bindparam("b_most"))
)
#: Gives ``b_held`` back and adds ``b_used`` to the spend (a release is ``b_used=0``).
SETTLE = (
    update(_W)
    .where(_KEY)
    .values(reserved=_W.c.reserved - bindparam("b_held"), spent=_W.c.spent + bindparam("b_used"))
)
_INSERTS: dict[str, Any] = {}


def _insert(dialect: str) -> Any:
    statement = _INSERTS.get(dialect)
    if statement is None:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        statement = _INSERTS[dialect] = (
            dialect_insert(_W)
            .values(
                budget_id=bindparam("b_id"),
                subject=bindparam("b_subject"),
                starts=bindparam("b_starts"),
                spent=0,
                reserved=0,
            )
            .on_conflict_do_nothing()
        )
    return statement


def settle_rows(holds: Sequence[Hold], used: int | None) -> list[dict[str, Any]]:
    """The ``SETTLE`` parameters for ``holds``: ``used`` tokens are charged to each (None:
    the provider said nothing, so the held amount is; 0: released)."""
    return [
        {
            "b_id": h.budget_id,
            "b_subject": h.subject,
            "b_starts": h.starts,
            "b_held": h.amount,
            "b_used": h.amount if used is None else used,
            "b_limit": h.limit,
            "b_guild": h.guild_id,
        }
        for h in holds
    ]


def _hold_all(rows: list[dict[str, Any]]) -> Callable[[Connection], tuple[int, int] | None]:
    """The write: hold every row or none; on a refusal, (its index, its spent + reserved)."""

    def write(conn: Connection) -> tuple[int, int] | None:
        taken: list[dict[str, Any]] = []
        for index, row in enumerate(rows):
            if conn.execute(_HOLD, row).rowcount != 1:
                conn.execute(_insert(conn.dialect.name), row)  # the window's first call
                if conn.execute(_HOLD, row).rowcount != 1:
                    if taken:  # given back before the commit: nobody saw them held
                        conn.execute(
                            SETTLE, [{**r, "b_held": r["b_most"], "b_used": 0} for r in taken]
                        )
                    used = conn.execute(
                        select(_W.c.spent + _W.c.reserved).where(
                            _W.c.budget_id == row["b_id"],
                            _W.c.subject == row["b_subject"],
                            _W.c.starts == row["b_starts"],
                        )
                    ).scalar()
                    return index, int(used or 0)
            taken.append(row)
        return None

    return write


def _deadlock(exc: DBAPIError) -> bool:
    return getattr(exc.orig, "sqlstate", None) in ("40P01", "40001")


class Budgets:
    """``kernel.llm``'s budget keeper: which budgets a call meets, its holds, its settling."""

    def __init__(
        self, db: Database, cache: LlmCache, clock: Callable[[], float] = time.time
    ) -> None:
        self.db = db
        self.cache = cache
        self.clock = clock

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
        self, guild_id: str, where: dict[str, Any], provider: str, model: str, most: int
    ) -> list[Hold]:
        """Hold ``most`` tokens on every budget that covers the call, or raise
        ``BudgetExhausted`` naming the first that cannot (holding nothing)."""
        budgets = await self.for_guild(guild_id)
        if not budgets:
            return []
        covering = applicable(budgets, where, provider, model)
        if not covering:
            return []
        now = datetime.fromtimestamp(self.clock(), UTC)
        starts = [window_start(b.window, b.reset_hour, now) for b, _ in covering]
        rows = [
            {
                "b_id": b.id,
                "b_subject": subject,
                "b_starts": int(start.timestamp()),
                "b_most": most,
                "b_limit": b.limit,
            }
            for (b, subject), start in zip(covering, starts, strict=True)
        ]
        refused = await self._hold(rows)
        if refused is not None:
            index, used = refused
            budget = covering[index][0]
            left = max(budget.limit - used, 0)
            raise BudgetExhausted(budget, most, left, next_start(budget.window, starts[index]))
        return [
            Hold(r["b_id"], r["b_subject"], r["b_starts"], most, guild_id, r["b_limit"])
            for r in rows
        ]

    async def _hold(self, rows: list[dict[str, Any]]) -> tuple[int, int] | None:
        """The hold's write; a caller cancelled while it commits gives the holds back."""
        fn = _hold_all(rows)
        for attempt in range(DEADLOCK_RETRIES):
            future = asyncio.ensure_future(self.db.writer.write(fn))
            try:
                return await asyncio.shield(future)  # type: ignore[no-any-return]
            except asyncio.CancelledError:
                future.add_done_callback(functools.partial(self._release_late, rows))
                raise
            except DBAPIError as exc:  # two processes' batches locked rows in turn
                if not _deadlock(exc) or attempt == DEADLOCK_RETRIES - 1:
                    raise
                log.info("llm budget hold retried after a deadlock")
        raise AssertionError("unreachable")

    def _release_late(self, rows: list[dict[str, Any]], future: asyncio.Future[Any]) -> None:
        """The holds landed after their caller was cancelled: nobody else will settle them."""
        if future.cancelled() or future.exception() is not None or future.result() is not None:
            return  # nothing was held
        released = [{**r, "b_held": r["b_most"], "b_used": 0} for r in rows]
        self.db.writer.submit(lambda conn: conn.execute(SETTLE, released))
