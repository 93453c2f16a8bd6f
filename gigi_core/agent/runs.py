"""Durable run records: status and counters in plain columns, conversation state sealed."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, select, update

from gigi_core.agent.journal import ACTIVE, state_ad
from gigi_core.errors import GigiError
from gigi_core.store.agent_tables import AgentRun, AgentRunConfirmation, AgentRunStep
from gigi_core.store.audit import AuditRecord
from gigi_core.store.sealing import Sealed
from gigi_core.store.tables import AuditEvent, utcnow

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel


class RunNotFound(GigiError):
    exit_code = 2


@dataclass
class StepRecord:
    """Metadata of one step; there is no field for text, arguments or results."""

    kind: str
    status: str
    tool: str | None = None
    capability: str | None = None
    decision: str | None = None
    duration_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    # a refused call: ``class[: detail]``, detail a sanitised name, field path or capability
    reason: str | None = None


class RunStore:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.db = kernel.db

    async def get(self, run_id: str) -> AgentRun:
        await self.db.writer.drain()
        async with self.db.session() as s:
            row = await s.get(AgentRun, run_id)
        if row is None:
            raise RunNotFound(f"no agent run {run_id!r}")
        return row

    async def last(self, guild_id: str | None = None, actor_id: str | None = None) -> AgentRun:
        query = select(AgentRun).order_by(AgentRun.created_at.desc(), AgentRun.id.desc()).limit(1)
        if guild_id is not None:
            query = query.where(AgentRun.guild_id == guild_id)
        if actor_id is not None:
            query = query.where(AgentRun.actor_id == actor_id)
        await self.db.writer.drain()
        async with self.db.session() as s:
            row = await s.scalar(query)
        if row is None:
            raise RunNotFound("there are no agent runs yet")
        return row

    async def status(self, run_id: str) -> str:
        await self.db.writer.drain()
        async with self.db.session() as s:
            return str(await s.scalar(select(AgentRun.status).where(AgentRun.id == run_id)))

    async def load(self, run_id: str) -> tuple[dict[str, Any], str]:
        """The run's unsealed state and its status."""
        row = await self.get(run_id)
        if row.state_sealed is None or row.state_nonce is None or row.state_key_id is None:
            raise GigiError(f"run {run_id} has no stored state to resume")
        plain = self.kernel.state_sealer.open(
            Sealed(row.state_key_id, row.state_nonce, row.state_sealed, ""), state_ad(run_id)
        )
        return json.loads(plain), row.status

    async def finish(
        self,
        run_id: str,
        status: str,
        reason: str,
        audit: AuditRecord | None = None,
        **columns: Any,
    ) -> None:
        """End a run; its sealed state is dropped because nothing can resume it any more."""
        await self.db.writer.drain()
        async with self.db.engine.begin() as s:
            if audit is not None:
                await s.execute(insert(AuditEvent), {"created_at": utcnow(), **asdict(audit)})
            await s.execute(
                update(AgentRun)
                .where(AgentRun.id == run_id, AgentRun.status.in_(ACTIVE))
                .values(
                    status=status,
                    termination_reason=reason,
                    finished_at=utcnow(),
                    updated_at=utcnow(),
                    state_sealed=None,
                    state_nonce=None,
                    state_key_id=None,
                    **columns,
                )
            )

    async def cancel(self, run_id: str) -> bool:
        """True when an active run was cancelled now; pending confirmations become rejected."""
        await self.db.writer.drain()
        async with self.db.session() as s:
            result = await s.execute(
                update(AgentRun)
                .where(AgentRun.id == run_id, AgentRun.status.in_(ACTIVE))
                .values(
                    status="cancelled",
                    termination_reason="cancelled",
                    finished_at=utcnow(),
                    updated_at=utcnow(),
                    state_sealed=None,
                    state_nonce=None,
                    state_key_id=None,
                )
            )
            if result.rowcount:
                await s.execute(
                    update(AgentRunConfirmation)
                    .where(
                        AgentRunConfirmation.run_id == run_id,
                        AgentRunConfirmation.state == "pending",
                    )
                    .values(state="rejected", updated_at=utcnow())
                )
            return bool(result.rowcount)

    async def note(self, run_id: str, *, tool: str | None, status: str) -> None:
        """Append a ``note`` step to a run's trace: a code and an action name, never text."""
        await self.db.writer.drain()  # after the run's own queued writes
        async with self.db.session() as s:
            if await s.get(AgentRun, run_id) is None:
                raise RunNotFound(f"no agent run {run_id!r}")
            last = await s.scalar(
                select(func.max(AgentRunStep.step_index)).where(AgentRunStep.run_id == run_id)
            )
            s.add(
                AgentRunStep(
                    run_id=run_id,
                    step_index=(last if last is not None else -1) + 1,
                    kind="note",
                    tool=tool,
                    status=status,
                )
            )

    async def trace(self, run_id: str) -> dict[str, Any]:
        """Everything safe to show about a run: metadata only, by construction."""
        run = await self.get(run_id)
        async with self.db.session() as s:
            steps = list(
                await s.scalars(
                    select(AgentRunStep)
                    .where(AgentRunStep.run_id == run_id)
                    .order_by(AgentRunStep.step_index)
                )
            )
            confirmations = list(
                await s.scalars(
                    select(AgentRunConfirmation)
                    .where(AgentRunConfirmation.run_id == run_id)
                    .order_by(AgentRunConfirmation.created_at)
                )
            )
        return {
            "run_id": run.id,
            "request_id": run.request_id,
            "kind": run.kind,
            "actor_id": run.actor_id,
            "guild_id": run.guild_id,
            "channel_id": run.channel_id,
            "status": run.status,
            "termination_reason": run.termination_reason,
            "budgets_used": {
                "steps": run.steps_used,
                "tool_calls": run.tool_calls_used,
                "llm_calls": run.llm_calls_used,
                "tokens": run.tokens_used,
            },
            "created_at": _iso(run.created_at),
            "finished_at": _iso(run.finished_at),
            "steps": [
                {
                    "index": st.step_index,
                    "kind": st.kind,
                    "tool": st.tool,
                    "capability": st.capability,
                    "decision": st.decision,
                    "status": st.status,
                    "duration_ms": st.duration_ms,
                    "input_tokens": st.input_tokens,
                    "output_tokens": st.output_tokens,
                    "reason": st.reason,
                }
                for st in steps
            ],
            "confirmations": [
                {
                    "id": c.id,
                    "action": c.action,
                    "state": c.state,
                    "requester_id": c.requester_id,
                    "decided_by": c.decided_by,
                    "expires_at": _iso(c.expires_at),
                }
                for c in confirmations
            ],
        }


def new_run_row(
    run_id: str,
    request_id: str,
    kind: str,
    actor_id: str,
    guild_id: str,
    channel_id: str | None,
) -> dict[str, Any]:
    now = utcnow()
    return {
        "id": run_id,
        "request_id": request_id,
        "kind": kind,
        "actor_id": actor_id,
        "guild_id": guild_id,
        "channel_id": channel_id,
        "status": "running",
        "steps_used": 0,
        "tool_calls_used": 0,
        "llm_calls_used": 0,
        "tokens_used": 0,
        "created_at": now,
        "updated_at": now,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None
