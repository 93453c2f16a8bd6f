"""Confirmation records and their state machine; conditional updates make a call run once.

pending -> approved (claimed by exactly one approver) -> executing -> done;
pending -> rejected | expired; approved -> failed when arguments or manifest changed;
executing -> failed when the run was cancelled before the call ran.
A call that crashed mid-execution stays ``executing`` and is never run again.

The run's owner makes the moves after a decision (approved -> executing -> done | failed),
each conditional on still owning the run in the same statement: a process that lost the
run to another moves nothing. A new confirmation is written in the run's own (fenced)
pause write, so it exists only if the run really paused (``row``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import exists, select, update

from gigi_core.errors import GigiError
from gigi_core.policy.actor import Actor
from gigi_core.store.agent_tables import AgentRun, AgentRunConfirmation
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel


class ConfirmationError(GigiError):
    """A confirmation cannot be used: wrong person, expired, already decided, run gone."""

    exit_code = 3


@dataclass(frozen=True)
class Claim:
    confirmation_id: str
    run_id: str
    call_id: str
    action: str
    args_hash: str
    manifest_version: str


def canonical(args: dict[str, Any]) -> bytes:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class ConfirmationStore:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.db = kernel.db

    def args_hash(self, args: dict[str, Any]) -> str:
        return self.kernel.state_sealer.keyed_hash(canonical(args))

    def row(
        self,
        confirmation_id: str,
        run_id: str,
        call_id: str,
        action: str,
        args: dict[str, Any],
        manifest_version: str,
        requester_id: str,
        ttl_seconds: int,
    ) -> dict[str, Any]:
        """A pending confirmation's row, for the run's pause write to insert."""
        now = utcnow()
        return {
            "id": confirmation_id,
            "run_id": run_id,
            "call_id": call_id,
            "action": action,
            "args_hash": self.args_hash(args),
            "manifest_version": manifest_version,
            "requester_id": requester_id,
            "approver_rule": "requester_or_admin",
            "state": "pending",
            "decided_by": None,
            "expires_at": datetime.now(UTC) + timedelta(seconds=ttl_seconds),
            "created_at": now,
            "updated_at": now,
        }

    async def pending_for_run(self, run_id: str) -> AgentRunConfirmation:
        async with self.db.session() as s:
            row = await s.scalar(
                select(AgentRunConfirmation)
                .where(AgentRunConfirmation.run_id == run_id)
                .order_by(AgentRunConfirmation.created_at.desc())
                .limit(1)
            )
        if row is None:
            raise ConfirmationError(f"run {run_id} has no confirmation")
        return row

    async def get(self, confirmation_id: str) -> AgentRunConfirmation:
        async with self.db.session() as s:
            row = await s.get(AgentRunConfirmation, confirmation_id)
        if row is None:
            raise ConfirmationError(f"no confirmation {confirmation_id!r}")
        return row

    async def claim(self, confirmation_id: str, actor: Actor) -> Claim:
        """Atomically move pending -> approved for an allowed approver; only one caller wins."""
        row = await self.get(confirmation_id)
        self._check_approver(row, actor)
        now = utcnow()
        async with self.db.session() as s:
            run_status = await s.scalar(select(AgentRun.status).where(AgentRun.id == row.run_id))
            if run_status != "awaiting_confirmation":
                raise ConfirmationError(_closed_message(row, run_status))
            result = await s.execute(
                update(AgentRunConfirmation)
                .where(
                    AgentRunConfirmation.id == confirmation_id,
                    AgentRunConfirmation.state == "pending",
                    AgentRunConfirmation.expires_at > now,
                )
                .values(state="approved", decided_by=actor.id, updated_at=now)
            )
        if result.rowcount != 1:
            await self._expire_if_due(confirmation_id)
            fresh = await self.get(confirmation_id)
            raise ConfirmationError(_state_message(fresh))
        return Claim(
            row.id, row.run_id, row.call_id, row.action, row.args_hash, row.manifest_version
        )

    async def reject(self, confirmation_id: str, actor: Actor) -> AgentRunConfirmation:
        row = await self.get(confirmation_id)
        self._check_approver(row, actor)
        async with self.db.session() as s:
            result = await s.execute(
                update(AgentRunConfirmation)
                .where(
                    AgentRunConfirmation.id == confirmation_id,
                    AgentRunConfirmation.state == "pending",
                    AgentRunConfirmation.expires_at > utcnow(),
                )
                .values(state="rejected", decided_by=actor.id, updated_at=utcnow())
            )
        if result.rowcount != 1:
            await self._expire_if_due(confirmation_id)
            raise ConfirmationError(_state_message(await self.get(confirmation_id)))
        return row

    async def move(
        self, confirmation_id: str, from_state: str, to_state: str, *, owner: str | None = None
    ) -> bool:
        """A conditional transition; False when someone else moved it first.

        With ``owner``, only while that owner still holds the run (fenced in the same UPDATE).
        """
        query = update(AgentRunConfirmation).where(
            AgentRunConfirmation.id == confirmation_id, AgentRunConfirmation.state == from_state
        )
        if owner is not None:
            query = query.where(
                exists().where(AgentRun.id == AgentRunConfirmation.run_id, AgentRun.owner == owner)
            )
        async with self.db.session() as s:
            result = await s.execute(query.values(state=to_state, updated_at=utcnow()))
        return result.rowcount == 1

    async def _expire_if_due(self, confirmation_id: str) -> None:
        async with self.db.session() as s:
            await s.execute(
                update(AgentRunConfirmation)
                .where(
                    AgentRunConfirmation.id == confirmation_id,
                    AgentRunConfirmation.state == "pending",
                    AgentRunConfirmation.expires_at <= utcnow(),
                )
                .values(state="expired", updated_at=utcnow())
            )

    @staticmethod
    def _check_approver(row: AgentRunConfirmation, actor: Actor) -> None:
        if actor.id != row.requester_id and not actor.is_admin:
            raise ConfirmationError(
                "only the person who asked, or a server admin, can decide this confirmation"
            )


def claim_of(row: AgentRunConfirmation) -> Claim:
    """The claim a decided confirmation stands for (a recovered run settles it)."""
    return Claim(row.id, row.run_id, row.call_id, row.action, row.args_hash, row.manifest_version)


def _state_message(row: AgentRunConfirmation) -> str:
    return {
        "executing": "this action is already running or ran (it is never run twice)",
        "done": "this action was already confirmed and done",
        "rejected": "this action was rejected",
        "expired": "this confirmation expired; ask again",
        "approved": "this action is already being handled",
        "failed": "this action changed since it was proposed, so it was not run; ask again",
    }.get(row.state, f"this confirmation is {row.state}")


def _closed_message(row: AgentRunConfirmation, run_status: str | None) -> str:
    if run_status == "cancelled":
        return f"run {row.run_id} was cancelled, so it cannot be confirmed"
    if run_status in ("done", "failed"):
        return f"run {row.run_id} already finished ({run_status})"
    return _state_message(row)
