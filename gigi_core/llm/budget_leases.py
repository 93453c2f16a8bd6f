"""Per-process leases on budget windows: one write takes a share, calls are held from it.

A call's hold needs no commit of its own when the process already holds a share of the
window: ``take`` moves a share from the window's room to its ``reserved`` with one
conditional UPDATE (``spent + reserved + share <= limit``), in the same write for every
window of the call, and records it in ``llm_budget_leases``. Calls then hold their most
cost from the share in memory. Settling moves what a call used from ``reserved`` to
``spent`` and off the lease row in the usage row's own transaction, so the window's
``spent + reserved`` never exceeds the limit: leases change who holds the room, not how
much of it there is.

A lease idle for ``IDLE_SECONDS`` is given back, and every lease at close; one not
renewed for ``LEASE_SECONDS`` (its process crashed) is reclaimed by the next process that
finds the window full. A share is at most a quarter of the limit (and ``LEASE_CALLS``
calls), so one process never takes a small budget's room from the others for long.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, delete, exists, func, select, text, update

from gigi_core.store.budget_tables import LlmBudgetLease, LlmBudgetWindow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

#: How many calls' worth a share is, at most.
LEASE_CALLS = 16
#: A share is at most 1/LEASE_SHARE of the limit, so several processes each get one.
LEASE_SHARE = 4
#: A lease not renewed for this long belongs to a crashed process: others may reclaim it.
LEASE_SECONDS = 300
#: A lease with less than this left is renewed before it holds another call.
RENEW_BELOW = 240
#: A lease no call used for this long is given back.
IDLE_SECONDS = 10.0

_W = LlmBudgetWindow.__table__
_L = LlmBudgetLease.__table__
_WKEY = (
    (_W.c.budget_id == bindparam("b_id"))
    & (_W.c.subject == bindparam("b_subject"))
    & (_W.c.starts == bindparam("b_starts"))
)
_LWIN = (
    (_L.c.budget_id == bindparam("b_id"))
    & (_L.c.subject == bindparam("b_subject"))
    & (_L.c.starts == bindparam("b_starts"))
)
_LKEY = _LWIN & (_L.c.holder == bindparam("b_lease"))
#: Moves ``b_take`` from the window's room to its ``reserved``, if there is that much room.
_TAKE = (
    update(_W)
    .where(_WKEY & (_W.c.spent + _W.c.reserved + bindparam("b_take") <= bindparam("b_limit")))
    .values(reserved=_W.c.reserved + bindparam("b_take"))
)
_GIVE = update(_W).where(_WKEY).values(reserved=_W.c.reserved - bindparam("b_give"))
_EXPIRED = delete(_L).where(_LWIN & (_L.c.expires < bindparam("b_now"))).returning(_L.c.amount)
_DROP = delete(_L).where(_LKEY).returning(_L.c.amount)
_SHRINK = update(_L).where(_LKEY).values(amount=_L.c.amount - bindparam("b_give"))
#: SQLite settles a row in two statements (one writer at a time: nothing moves between).
_SETTLE_WINDOW = (
    update(_W)
    .where(_WKEY)
    .values(
        spent=_W.c.spent + bindparam("b_used"),
        reserved=_W.c.reserved
        - func.coalesce(
            select(bindparam("b_held")).where(exists().where(_LKEY)).scalar_subquery(), 0
        ),
    )
    .returning(_W.c.spent, _W.c.alerted)
)
_SETTLE_LEASE = update(_L).where(_LKEY).values(amount=_L.c.amount - bindparam("b_held"))
_INSERTS: dict[tuple[str, str], Any] = {}


@dataclass
class Lease:
    """This process's share of one window: ``granted`` is in the window's ``reserved``,
    ``inuse`` of it is held by calls in flight."""

    holder: str
    limit: int
    granted: int = 0
    inuse: int = 0
    expires: float = 0.0
    used_at: float = 0.0  # monotonic: when a call last took or settled a hold
    stored: bool = False  # its row was written: a take or renew that finds it gone drops it

    @property
    def free(self) -> int:
        return self.granted - self.inuse


def share(limit: int, most: int) -> int:
    """How much one take asks for: up to ``LEASE_CALLS`` calls, at most a quarter of the
    limit, never less than the one call."""
    calls = max(1, min(LEASE_CALLS, limit // (LEASE_SHARE * max(most, 1))))
    return calls * most


def _insert(dialect: str, table: str) -> Any:
    statement = _INSERTS.get((dialect, table))
    if statement is None:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        if table == "window":
            statement = (
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
        else:
            base = dialect_insert(_L).values(
                budget_id=bindparam("b_id"),
                subject=bindparam("b_subject"),
                starts=bindparam("b_starts"),
                holder=bindparam("b_lease"),
                amount=bindparam("b_take"),
                expires=bindparam("b_expires"),
            )
            statement = base.on_conflict_do_update(
                index_elements=["budget_id", "subject", "starts", "holder"],
                set_={
                    "amount": _L.c.amount + base.excluded.amount,
                    "expires": base.excluded.expires,
                },
            )
        _INSERTS[(dialect, table)] = statement
    return statement


@dataclass(frozen=True)
class Reclaimed:
    """What ``take`` returns when leases the process holds in memory have no row any more
    (another process reclaimed them as expired): their room is not this process's now."""

    indexes: tuple[int, ...]


def take(rows: Sequence[dict[str, Any]]) -> Any:
    """The write that extends a lease on every window in ``rows`` or on none.

    Each row asks for ``b_want`` and settles for ``b_need`` (what the call lacks); a window
    without that much room first reclaims leases that expired. Returns the amounts taken,
    or (index, spent + reserved) of the first window that could not give ``b_need``, or
    ``Reclaimed`` (taking nothing) if a lease marked ``b_stored`` has no row any more.
    """

    def write(conn: Connection) -> list[int] | tuple[int, int] | Reclaimed:
        dialect = conn.dialect.name
        gone = tuple(
            index
            for index, row in enumerate(rows)
            if row.get("b_stored")
            and conn.execute(select(_L.c.amount).where(_LKEY), row).first() is None
        )
        if gone:
            return Reclaimed(gone)
        taken: list[int] = []
        for index, row in enumerate(rows):
            amount = _take_one(conn, row)
            if amount is None:
                conn.execute(_insert(dialect, "window"), row)  # the window's first call
                reclaimed = sum(int(a) for a in conn.execute(_EXPIRED, row).scalars())
                if reclaimed:
                    conn.execute(_GIVE, {**row, "b_give": reclaimed})
                amount = _take_one(conn, row)
            if amount is None:
                for earlier, got in zip(rows, taken, strict=False):  # nobody saw them taken
                    if got:
                        conn.execute(_GIVE, {**earlier, "b_give": got})
                used = conn.execute(select(_W.c.spent + _W.c.reserved).where(_WKEY), row).scalar()
                return index, int(used or 0)
            taken.append(amount)
        upsert = _insert(dialect, "lease")
        for row, amount in zip(rows, taken, strict=True):  # also renews each lease's expiry
            conn.execute(upsert, {**row, "b_take": amount})
        return taken

    return write


def _take_one(conn: Connection, row: dict[str, Any]) -> int | None:
    for amount in dict.fromkeys((row["b_want"], row["b_need"])):
        if conn.execute(_TAKE, {**row, "b_take": amount}).rowcount == 1:
            return int(amount)
    return None


def give_back(rows: Sequence[dict[str, Any]]) -> Any:
    """The write that returns leases: a row with ``b_give`` None drops the lease (its whole
    amount as stored), otherwise ``b_give`` of it goes back to the window's room."""

    def write(conn: Connection) -> None:
        for row in rows:
            if row["b_give"] is None:
                amount = conn.execute(_DROP, row).scalar()
                if amount:
                    conn.execute(_GIVE, {**row, "b_give": int(amount)})
            elif row["b_give"] > 0 and conn.execute(_SHRINK, row).rowcount == 1:
                conn.execute(_GIVE, row)

    return write


def settle(conn: Connection, rows: Sequence[dict[str, Any]]) -> set[int]:
    """In the usage row's transaction: ``b_used`` joins the window's spend; ``b_held`` of
    the lease (what the call used, up to what its lease had) leaves ``reserved`` and the
    lease, if the lease is still there (a reclaimed one was already given back in full).

    Returns the indexes of the rows whose window may have crossed an alert threshold not
    yet announced (``budget_alerts.claim`` claims those, nearly always none).
    """
    live = [(i, r) for i, r in enumerate(rows) if r["b_used"] or r["b_held"]]
    if not live:
        return set()
    if conn.dialect.name == "postgresql":
        windows = _settle_pg(conn, [r for _, r in live])
    else:
        windows = {}
        for _, row in live:
            got = conn.execute(_SETTLE_WINDOW, row).first()
            conn.execute(_SETTLE_LEASE, row)
            if got is not None:
                windows[_window(row)] = (int(got.spent), int(got.alerted))
    due: set[int] = set()
    seen: set[tuple[str, str, int]] = set()
    for index, row in live:
        key = _window(row)
        state = windows.get(key)
        if state is None or key in seen or not row.get("b_limit"):
            continue
        seen.add(key)  # one claim per window: the others would find it claimed
        if reached(state[0], int(row["b_limit"])) > state[1]:
            due.add(index)
    return due


def reached(spent: int, limit: int) -> int:
    """The highest alert threshold (percent) ``spent`` has reached, 0 if none."""
    from gigi_core.llm.budget_alerts import THRESHOLDS  # it imports this module

    return max((p for p in THRESHOLDS if spent > 0 and spent * 100 >= limit * p), default=0)


def _window(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["b_id"], row["b_subject"], int(row["b_starts"])


_MATCH = "{a}.budget_id = {b}.budget_id AND {a}.subject = {b}.subject AND {a}.starts = {b}.starts"


def _values(params: dict[str, Any], prefix: str, items: list[tuple[Any, ...]]) -> str:
    """A VALUES list of bound, typed cells (text ids, then BIGINT numbers)."""
    out = []
    for n, item in enumerate(items):
        cells = []
        for m, value in enumerate(item):
            name = f"{prefix}{n}_{m}"
            params[name] = value
            cells.append(f"CAST(:{name} AS {'BIGINT' if isinstance(value, int) else 'VARCHAR'})")
        out.append(f"({', '.join(cells)})")
    return ", ".join(out)


def _settle_pg(
    conn: Connection, rows: Sequence[dict[str, Any]]
) -> dict[tuple[str, str, int], tuple[int, int]]:
    """Every row in one statement (one round trip): the leases first (row-locked; only
    those still there give back ``reserved``), then each window once with its rows' sums."""
    held: dict[tuple[str, str, int, str], int] = {}
    used: dict[tuple[str, str, int], int] = {}
    for row in rows:
        key = _window(row)
        used[key] = used.get(key, 0) + int(row["b_used"])
        if row["b_held"] and row.get("b_lease"):
            lease = (*key, str(row["b_lease"]))
            held[lease] = held.get(lease, 0) + int(row["b_held"])
    params: dict[str, Any] = {}
    wv = _values(params, "w", [(*k, v) for k, v in used.items()])
    if held:
        lv = _values(params, "l", [(*k, v) for k, v in held.items()])
        leases = (
            f"lv (budget_id, subject, starts, holder, held) AS (VALUES {lv}), "
            "l AS (UPDATE llm_budget_leases AS x SET amount = x.amount - lv.held FROM lv "
            f"WHERE {_MATCH.format(a='x', b='lv')} AND x.holder = lv.holder "
            "RETURNING x.budget_id, x.subject, x.starts, lv.held), "
        )
        back = f"COALESCE((SELECT SUM(l.held) FROM l WHERE {_MATCH.format(a='l', b='w')}), 0)"
    else:
        leases, back = "", "0"
    statement = (
        f"WITH {leases}wv (budget_id, subject, starts, used) AS (VALUES {wv}) "
        "UPDATE llm_budget_windows AS w SET spent = w.spent + wv.used, "
        f"reserved = w.reserved - {back} FROM wv WHERE {_MATCH.format(a='w', b='wv')} "
        "RETURNING w.budget_id, w.subject, w.starts, w.spent, w.alerted"
    )
    got = conn.execute(text(statement), params)
    return {(r[0], r[1], int(r[2])): (int(r[3]), int(r[4])) for r in got}


_RENEW = update(_L).where(_LKEY).values(expires=bindparam("b_expires"))


def renew(rows: Sequence[dict[str, Any]]) -> Any:
    """The write that pushes back leases' expiry (``b_expires``) while calls hold them;
    returns the indexes of the rows whose lease is gone (reclaimed by another process)."""

    def write(conn: Connection) -> list[int]:
        return [i for i, row in enumerate(rows) if conn.execute(_RENEW, row).rowcount != 1]

    return write
