"""A run's write-behind journal: its state, step rows and audit rows, written in batches.

Durability (``GIGI_RUN_DURABILITY``) decides when the journal is written:

- ``step``: after every step, before the run goes on (the strongest, and the slowest).
- ``turn`` (default): at the durable boundaries — before a call with effects runs, when the
  run pauses for a confirmation, when it ends — and every ``flush_seconds`` while it holds
  unwritten records. A crash loses at most the read-only steps and model calls since the
  last write; ``gigi agent recover`` runs those again, and a call with effects never reruns.
- ``deferred``: as ``turn``, but the reply does not wait for the run's last write.

Fencing: every write is conditional on the run's ``owner`` (this process) in the same
statement's WHERE clause, and renews its lease on the database clock. A process whose run
was taken over (``gigi agent recover`` elsewhere, after the lease expired) writes nothing
more: its write matches no row, the journal is ``lost`` and the runner stops.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Float, bindparam, insert, select, update

from gigi_core.agent.state import ToolNames
from gigi_core.errors import ConfigError
from gigi_core.store.agent_tables import AgentRun, AgentRunStep
from gigi_core.store.leases import db_epoch
from gigi_core.store.tables import AuditEvent, utcnow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from gigi_core.agent.runs import StepRecord
    from gigi_core.agent.state import RunState
    from gigi_core.store.audit import AuditRecord
    from gigi_core.store.sealing import Sealer
    from gigi_core.store.writer import Writer

DURABILITY = ("step", "turn", "deferred")
# Core statements built once: ORM-enabled inserts coerce every row's keys, and a statement
# built per write pays for its cache key every time (together ~2x the write's cost).
_RUNS = AgentRun.__table__
# The lease runs out ``lease_for`` seconds from now on the database's clock; NULL releases it.
_LEASE = db_epoch() + bindparam("lease_for", type_=Float())
_INSERT_RUN = insert(_RUNS).values(lease_until=_LEASE)
_INSERT_STEPS = insert(AgentRunStep.__table__)
_INSERT_AUDIT = insert(AuditEvent.__table__)
_COLUMNS = (
    "status",
    "updated_at",
    "steps_used",
    "tool_calls_used",
    "llm_calls_used",
    "tokens_used",
    "state_key_id",
    "state_nonce",
    "state_sealed",
)
_FENCE = _RUNS.c.owner == bindparam("fence_owner")
_UPDATE = update(_RUNS).where(
    _RUNS.c.id == bindparam("run_id"),
    _RUNS.c.status.in_(bindparam("expect", expanding=True)),
    _FENCE,
)
_CHECKPOINT = _UPDATE.values({**{c: bindparam(c) for c in _COLUMNS}, "lease_until": _LEASE})
# A run cancelled meanwhile keeps its status, and still counts what it used.
_COUNTERS = ("updated_at", "steps_used", "tool_calls_used", "llm_calls_used", "tokens_used")
_COUNT = (
    update(_RUNS)
    .where(_RUNS.c.id == bindparam("run_id"), _FENCE)
    .values({c: bindparam(c) for c in _COUNTERS})
)
_FINISH = _UPDATE.values(
    {
        **{c: bindparam(c) for c in (*_COLUMNS, "termination_reason", "finished_at")},
        "lease_until": _LEASE,
    }
)
_HOLDER = select(_RUNS.c.owner).where(_RUNS.c.id == bindparam("run_id"))
# What a write found: the run's row took it, was cancelled meanwhile, or is another's now.
APPLIED, CANCELLED, LOST = "applied", "cancelled", "lost"
ACTIVE = ("running", "awaiting_confirmation")
_NO_STATE = {"state_key_id": None, "state_nonce": None, "state_sealed": None}


def durability_from(value: str | None) -> str:
    """Validate a durability setting; the error names the variable an operator sets."""
    value = (value or "turn").strip().lower()
    if value not in DURABILITY:
        raise ConfigError(
            f"GIGI_RUN_DURABILITY: unknown value {value!r}; use one of: {', '.join(DURABILITY)}"
        )
    return value


class RunJournal:
    """Buffers one run's records; ``flush`` writes them in one transaction."""

    def __init__(
        self,
        writer: Writer,
        sealer: Sealer,
        run_id: str,
        *,
        durability: str,
        flush_seconds: float,
        owner: str,
        lease_seconds: float,
        create: dict[str, Any] | None = None,
        stored_status: str = "running",
    ) -> None:
        self.writer = writer
        self.sealer = sealer
        self.run_id = run_id
        self.durability = durability
        self.flush_seconds = flush_seconds
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.cancelled = False  # set by a cancel in this process, or a write that found one
        self.lost = False  # a write found the run owned by another process: it stops here
        self._create = create  # the run's row, until its first write
        self._stored = stored_status  # what the row's status is once queued writes land
        self._latest: RunState | None = None  # recorded, not yet serialised
        self._due = False
        # The first record (values, state snapshot) for the row if the run waits; sealed only
        # then, so a run that never waits never serialises its state (every offered tool).
        self._first: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._values: dict[str, Any] = {}
        self._steps: list[dict[str, Any]] = []
        self._audits: list[dict[str, Any]] = []
        self._rows: list[tuple[Any, dict[str, Any]]] = []  # written only if the run's write is
        self._timer: asyncio.Handle | None = None
        self._queued_first: _FirstRow | None = None  # queued at the first wait, maybe unwritten
        self._submitted: list[asyncio.Future[Any]] = []  # queued without waiting
        self._finished = False
        self._batched_create: dict[str, Any] | None = None  # the row the last batch inserts

    @property
    def dirty(self) -> bool:
        return (
            self._latest is not None
            or self._create is not None
            or bool(self._audits)
            or bool(self._rows)
        )

    @property
    def status(self) -> str:
        """The status last recorded (what a write now would store)."""
        return str(self._values.get("status", self._stored))

    def record(
        self,
        state: RunState,
        *,
        step: tuple[int, StepRecord] | None = None,
        audits: list[AuditRecord] | tuple[AuditRecord, ...] = (),
        status: str = "running",
        rows: tuple[tuple[Any, dict[str, Any]], ...] = (),
    ) -> None:
        """Note a consistent point of the run. Its state is serialised only when written.

        ``rows`` (insert statement, values) go in the same transaction, only if the run's
        own write applies (not cancelled, still ours): a confirmation exists only if its run
        really paused.
        """
        if self._finished:  # e.g. a task cancelled during the final write: it stays ended
            return
        now = utcnow()
        self._latest = state
        self._values = {"status": status, "updated_at": now, **state.counters()}
        if step is not None:
            self._steps.append(
                {"run_id": self.run_id, "step_index": step[0], "created_at": now, **vars(step[1])}
            )
        self._audits.extend({"created_at": now, **vars(a)} for a in audits)  # flat: no asdict
        self._rows.extend(rows)
        if self._create is not None and self._first is None:  # the row, if the run waits
            self._first = (self._values, state.snapshot())
        if self._due:
            self._due = False
            self._submit(self._batch())
        elif self._timer is None and self.durability != "step":
            # A new run's row goes out as soon as the run first waits (for a model, a tool);
            # a turn that never waits is written once, at its end, row and steps together.
            # Later, a timer marks the journal due and the next consistent point writes it.
            loop = asyncio.get_running_loop()
            if self._create is not None:
                self._timer = loop.call_soon(self._on_timer)
            else:
                self._timer = loop.call_later(self.flush_seconds, self._on_timer)

    async def flush(self, *, wait: bool = True) -> None:
        """Write what is buffered; when waiting, a run cancelled meanwhile sets ``cancelled``.

        Waiting also means this run's earlier queued writes landed: one that failed raises
        here, so a durable point is never satisfied by a write that was only logged.
        """
        if self.dirty:
            write = self._batch()
            if not wait:
                self._submit(write)
                return
            self._applied(await self._write(write))
        if wait:
            await self._settle()

    async def finish(
        self,
        status: str,
        reason: str,
        counters: dict[str, int],
        audit: AuditRecord | None,
        *,
        wait: bool = True,
    ) -> bool:
        """End the run: its sealed state is dropped because nothing can resume it any more.

        Returns False when the run had been cancelled meanwhile, or taken over by another
        process (``lost``), which is only known when waiting.
        """
        now = utcnow()
        self._finished = True
        self._latest = None
        self._values = {
            "status": status,
            "termination_reason": reason,
            "finished_at": now,
            "updated_at": now,
            **counters,
        }
        closing = [{"created_at": now, **vars(audit)}] if audit is not None else []
        write = self._batch(final=True, closing=closing or None)
        if not wait:
            self._submit(write)
            return True
        found = await self._write(write)
        self._applied(found)
        await self._settle(raising=False)  # the run ends either way; failures were logged
        return found == APPLIED

    def stop(self) -> None:
        """The runner is gone (paused, finished or died): no late timed write."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        """Runs while the run waits, maybe mid-step: only its first row is written from here."""
        self._timer = None
        if self._create is not None:
            row = {**self._create, "owner": self.owner, "lease_for": self.lease_seconds}
            seal: Callable[[], dict[str, Any]] = dict
            if self._first is not None:
                values, snapshot = self._first
                row.update(values)
                seal = lambda: self._sealed(state_json(snapshot))  # noqa: E731
            first = self._queued_first = _FirstRow(row, self._create, seal)
            self._create = self._first = None
            self._submit(first.write)
            self._timer = asyncio.get_running_loop().call_later(self.flush_seconds, self._on_timer)
        elif self.dirty:
            self._due = True

    def _sealed(self, plain: str) -> dict[str, Any]:
        sealed = self.sealer.seal(plain, state_ad(self.run_id), fingerprint=False)
        return {
            "state_key_id": sealed.key_id,
            "state_nonce": sealed.nonce,
            "state_sealed": sealed.ciphertext,
        }

    async def _write(self, write: Any) -> str:
        """Write and wait; a failed write that was to insert the run's row gives the row back,
        so the write that records the failure inserts it (else it would find no row: lost)."""
        create = self._batched_create
        try:
            return await self.writer.write(write)  # type: ignore[no-any-return]
        except Exception:
            if create is not None and self._create is None:
                self._create = create
            raise

    def _applied(self, found: str) -> None:
        if found == LOST:
            self.lost = True
        elif found == CANCELLED:
            self.cancelled = True

    def _submit(self, write: Any) -> None:
        future = self.writer.submit(write, on_result=self._applied)
        if future is not None:  # landed writes are forgotten, failed ones kept for _settle
            self._submitted = [f for f in self._submitted if not _landed(f)] + [future]

    async def _settle(self, *, raising: bool = True) -> None:
        submitted, self._submitted = self._submitted, []
        if not raising:
            if submitted:
                await asyncio.wait(submitted)
            return
        for future in submitted:
            await future  # raises what the write raised

    def _batch(self, *, final: bool = False, closing: list[dict[str, Any]] | None = None) -> Any:
        """Take the buffered records out and return the function that writes them."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        values = dict(self._values)
        # The lease is renewed by every write while the run goes on, released when it waits
        # for a person (any process may resume it then) or ends.
        holding = not final and values.get("status", self._stored) == "running"
        values["lease_for"] = self.lease_seconds if holding else None
        if final:
            values.update(_NO_STATE)
            query = _FINISH
        else:
            assert self._latest is not None  # every batch but the last follows a record()
            query = _CHECKPOINT
            values.update(self._sealed(state_json(self._latest.to_json())))
        run_id, owner = self.run_id, self.owner
        create, expect = self._create, ACTIVE if final else (self._stored,)
        first, self._queued_first = self._queued_first, None
        if first is not None and create is None and first.take():
            create = first.create  # its INSERT never started: this write inserts the row
        self._batched_create = create
        steps, audits, rows = self._steps, self._audits, self._rows
        self._create = self._first = self._latest = None
        self._steps, self._audits, self._rows = [], [], []
        self._stored = values.get("status", self._stored)

        def write(conn: Connection) -> str:
            found = APPLIED
            if create is not None:
                conn.execute(_INSERT_RUN, {**create, **values, "owner": owner})
            else:
                params = {**values, "run_id": run_id, "expect": list(expect), "fence_owner": owner}
                if conn.execute(query, params).rowcount != 1:
                    # Rare, so asked only now: cancelled meanwhile, or another process's run.
                    if conn.execute(_HOLDER, {"run_id": run_id}).scalar() != owner:
                        return LOST  # a stale holder writes nothing at all
                    found = CANCELLED
                    conn.execute(_COUNT, params)
            if steps:  # rows for what happened, even when the run was cancelled meanwhile
                conn.execute(_INSERT_STEPS, steps)
            # The closing audit only if the write applied (else whoever cancelled the run
            # audited its end), in the same statement as the steps' audits.
            every = audits + closing if closing and found == APPLIED else audits
            if every:
                conn.execute(_INSERT_AUDIT, every)
            if found == APPLIED:
                for statement, row in rows:
                    conn.execute(statement, row)
            return found

        return write


@dataclass(eq=False)
class _FirstRow:
    """A run's first row, queued when it first waits (lingering for company in the writer).

    A write of the run that is built before the writer started this one takes it over
    (``take``) and inserts the row itself, as a run that never waited does: one INSERT
    instead of an INSERT and an UPDATE, and the state is never sealed for a row that is
    replaced in the same batch.
    """

    row: dict[str, Any]
    create: dict[str, Any]
    seal: Callable[[], dict[str, Any]]
    lock: threading.Lock = field(default_factory=threading.Lock)
    state: str = "queued"  # -> "written" (the writer started it) or "taken"

    def take(self) -> bool:
        """On the loop: take the row over unless the writer already started writing it."""
        with self.lock:
            if self.state != "queued":
                return False
            self.state = "taken"
            return True

    def write(self, conn: Connection) -> str:
        """On the writer thread: the INSERT, unless a later write of the run took it over."""
        with self.lock:
            if self.state == "taken":
                return APPLIED
            self.state = "written"
        conn.execute(_INSERT_RUN, {**self.row, **self.seal()})  # or it raises
        return APPLIED


def state_json(data: dict[str, Any]) -> str:
    """A state as JSON. A toolset's frozen names (shared by its runs) are encoded once."""
    tools = data.get("tools")
    if not isinstance(tools, ToolNames):
        return json.dumps(data)
    rest = json.dumps({k: v for k, v in data.items() if k != "tools"})
    member = tools.json_member
    return f"{rest[:-1]}, {member}}}" if rest != "{}" else f"{{{member}}}"


def _landed(future: asyncio.Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def state_ad(run_id: str) -> str:
    """Associated data binding a sealed state to its run: it cannot be moved to another."""
    return f"gigi:agent_run:{run_id}"
