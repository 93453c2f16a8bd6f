"""Which process executes a run: one owner per kernel, leases renewed while runs go on.

Every durable write of a run is conditional on its owner (``gigi_core.agent.journal``);
this module holds the owner, the runs executing under it (``live``, shared by every
``AgentRuntime`` of one kernel), the heartbeat that keeps their leases fresh while a long
call runs, and ``acquire``: taking a run over, which succeeds only when nobody holds it —
its lease was released (it waits for a person) or has expired (its process died).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from sqlalchemy import Float, bindparam, or_, select, update

from gigi_core.store.agent_tables import AgentRun
from gigi_core.store.leases import db_epoch, lease_seconds, new_owner

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from gigi_core.agent.journal import RunJournal
    from gigi_core.kernel import Kernel

# A run that another process took over ends here with this reply; its row is not touched.
MOVED, LEASE_LOST = "moved", "lease_lost"
MOVED_TEXT = (
    "This run was taken over by another Gigi process, so this one stopped without doing "
    "anything more."
)
LEASE_VARIABLE = "GIGI_RUN_LEASE_SECONDS"
DEFAULT_LEASE = 30.0
_RUNS = AgentRun.__table__
_LEASE = db_epoch() + bindparam("lease_for", type_=Float())
_RENEW = (
    update(_RUNS)
    .where(
        _RUNS.c.id.in_(bindparam("ids", expanding=True)),
        _RUNS.c.owner == bindparam("fence_owner"),
        _RUNS.c.status == "running",
    )
    .values(lease_until=_LEASE)
)
_BY_KERNEL: weakref.WeakKeyDictionary[Any, RunLeases] = weakref.WeakKeyDictionary()


def leases_for(kernel: Kernel) -> RunLeases:
    """The kernel's run leases (one owner per kernel, whatever runtimes it has)."""
    leases = _BY_KERNEL.get(kernel)
    if leases is None:
        leases = _BY_KERNEL[kernel] = RunLeases(kernel)
    return leases


def close_leases(kernel: Kernel) -> None:
    """No heartbeat after the kernel closed."""
    leases = _BY_KERNEL.get(kernel)
    if leases is not None:
        leases.close()


class LeaseHeld(Exception):
    """Another process holds the run's lease; carries when it runs out (epoch seconds)."""

    def __init__(self, owner: str | None, until: float | None, now: float) -> None:
        self.owner, self.until, self.now = owner, until, now


def held_message(run_id: str, held: LeaseHeld) -> str:
    """Why a run cannot be taken now, for the operator or member who tried."""
    if held.until is None or held.now is None or held.until <= held.now:
        return f"run {run_id} changed meanwhile (finished, cancelled or resumed); nothing was done"
    return (
        f"run {run_id} is held by another Gigi process ({held.owner}) for "
        f"{held.until - held.now:.1f} more second(s); if that process died, try again once its "
        f"lease expires ({LEASE_VARIABLE})"
    )


class RunLeases:
    def __init__(self, kernel: Kernel) -> None:
        self.db = kernel.db
        self.owner = new_owner()
        self.lease_seconds = lease_seconds(LEASE_VARIABLE, DEFAULT_LEASE)
        self.live: dict[str, RunJournal] = {}  # runs executing under this owner
        # Runs being taken (``acquire`` awaited, the runner not started): ``acquire`` treats
        # this owner's own runs as free, so a second taker here must be refused before it.
        self.taking: set[str] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    def watch(self) -> None:
        """Keep the live runs' leases fresh (every third of a lease) while there are any."""
        if self._timer is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.lease_seconds / 3, self._beat)

    def _beat(self) -> None:
        self._timer = None
        ids = list(self.live)
        if not ids or self._closed:
            return
        params = {"ids": ids, "fence_owner": self.owner, "lease_for": self.lease_seconds}
        self.db.writer.submit(lambda conn: conn.execute(_RENEW, params).rowcount)
        self.watch()

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def acquire(self, run_id: str, statuses: tuple[str, ...]) -> None:
        """Take the run if nobody holds it; raises ``LeaseHeld`` naming who does, and until when.

        Ours already (a run this kernel left, not executing now) counts as free: the caller
        first reserves the run in ``taking`` (``AgentRuntime._runner``), so two takers in this
        process never both get it.
        """
        await self.db.writer.drain()
        owner, lease = self.owner, self.lease_seconds

        def take(conn: Connection) -> tuple[bool, Any]:
            now = db_epoch()
            taken = conn.execute(
                update(_RUNS)
                .where(
                    _RUNS.c.id == run_id,
                    _RUNS.c.status.in_(statuses),
                    or_(
                        _RUNS.c.owner.is_(None),
                        _RUNS.c.owner == owner,
                        _RUNS.c.lease_until.is_(None),
                        _RUNS.c.lease_until < now,
                    ),
                )
                .values(owner=owner, lease_until=now + lease)
            )
            if taken.rowcount == 1:
                return True, None
            held = conn.execute(
                select(_RUNS.c.owner, _RUNS.c.lease_until, now).where(_RUNS.c.id == run_id)
            ).first()
            return False, held

        ok, held = await self.db.writer.write(take)
        if not ok:
            raise LeaseHeld(*(held or (None, None, None)))
