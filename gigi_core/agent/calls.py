"""One proposed call: look it up, validate, decide, then execute, refuse or pause for a person."""

from __future__ import annotations

import hashlib
import json
import re
import time
import weakref
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert

from gigi_core.agent.contracts import ConfirmationPrompt, Reply, new_id
from gigi_core.agent.place_policy import places_of
from gigi_core.agent.render import confirmation_arguments, declared_path
from gigi_core.agent.runs import StepRecord
from gigi_core.agent.signals import Paused, Stop, ms
from gigi_core.errors import InvalidArguments, PolicyDenied, ToolExecutionError, UnknownAction
from gigi_core.llm.types import ToolResultMessage
from gigi_core.manifest.models import ActionSpec, Safety, wire_name
from gigi_core.policy.decision import Decision, Outcome
from gigi_core.store.agent_tables import AgentRunConfirmation
from gigi_core.tools.bounds import truncate
from gigi_core.tools.invoke import execute, lookup, validate_args

if TYPE_CHECKING:
    from gigi_core.agent.runner import Runner

_INSERT_CONFIRMATION = insert(AgentRunConfirmation.__table__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")
MAX_REFUSED = 10  # names kept for the reply's note; the trace has every step
WHY = {  # a refusal's reason class, as the reply's note says it
    "unknown_tool": "no such tool",
    "not_offered": "not available to you here",
    "unparsable": "its arguments were not valid JSON",
    "confirm_rejected": "it was rejected",
    "confirm_expired": "its confirmation expired",
    "confirm_failed": "it changed or was no longer allowed before it could run",
}


def shown_name(name: Any, limit: int = 64) -> str:
    """A proposed name safe in any trace or chat markup: ``[A-Za-z0-9_.:-]``, else ``?``."""
    text = _UNSAFE.sub("?", str(name))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unknown_tool_reason(runner: Runner, name: Any) -> str:
    """``unknown_tool: NAME`` for a real action's name; else a hash and length, so the trace
    keeps no text the model chose (a name can carry anything it read)."""
    text = str(name)
    if _offered_elsewhere(runner, text) is not None:
        return f"unknown_tool: {shown_name(text)}"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"unknown_tool: sha256:{digest} ({len(text)} chars)"


def refused_lines(state: Any) -> list[str]:
    """The reply's ``refused``: each call refused and not since made, as "name (why)"."""
    return [f"{name} ({why})" for name, why in state.refused.items()]


def _offered_elsewhere(runner: Runner, name: str) -> ActionSpec | None:
    """A real action the model named (dotted or wire name) that this run does not offer."""
    actions = runner.kernel.registry.actions
    spec = actions.get(name)
    if spec is None and len(name) <= 64:
        spec = next((a for a in actions.values() if wire_name(a.name) == name), None)
    return spec


class CallHandler:
    """Works on its runner's state; every outcome becomes a tool result and a checkpoint."""

    def __init__(self, runner: Runner) -> None:
        # A proxy, not a reference: the runner holds its handler, and a cycle between them
        # left every finished turn (its state, messages, journal: ~60 objects) to the
        # cyclic collector, whose passes stalled every turn in flight (the slowest turns under load).
        self.runner: Runner = weakref.proxy(runner)
        self.executed = False  # a handler was started (a confirmed call is then done)

    async def handle(self, call: dict[str, Any]) -> None:
        r = self.runner
        s, b = r.state, r.budgets
        if s.tool_calls >= b.max_tool_calls:
            raise Stop.budget("max_tool_calls", b.max_tool_calls)
        direct = s.mode == "direct"
        try:
            spec = lookup(r.kernel, call["name"]) if direct else r.toolset.resolve(call["name"])
        except UnknownAction:
            step = StepRecord("tool", "unknown", reason=unknown_tool_reason(r, call["name"]))
            await r.commit(r.next_step(), step, "agent.tool", reason_code="unknown_tool")
            raise
        if spec is None:
            available = ", ".join(r.toolset.by_wire) or "none"
            # The model hears "unknown" either way: it learns nothing of actions not offered.
            known = _offered_elsewhere(r, str(call["name"]))
            return await self._invalid(
                call,
                known,
                f"unknown tool {truncate(repr(call['name']), 100)}; use one of: {available}",
                "not_offered" if known else unknown_tool_reason(r, call["name"]),
                offered=False,
            )
        if call.get("parse_error"):
            return await self._invalid(
                call,
                spec,
                f"arguments are not a JSON object ({truncate(call['parse_error'])}); "
                "send a JSON object matching the schema",
                "unparsable",
            )
        if direct and (denial := await r.base_denial(spec)) is not None:
            # Policy first: nobody learns an action's schema where they may not use it.
            step = StepRecord(
                "tool",
                "denied",
                tool=spec.name,
                capability=spec.capability,
                decision="deny",
                reason=f"policy_denied: {denial.code} {spec.capability}",
            )
            await r.commit(r.next_step(), step, "agent.tool", reason_code=denial.code)
            raise PolicyDenied(spec.name, denial.reason)
        try:
            arguments = call.get("arguments") or {}
            args = validate_args(
                r.kernel,
                spec,
                arguments,
                limits=r.limits,
                bounded=r.bounded(call.get("id"), arguments),
            )
        except InvalidArguments as exc:
            path = declared_path(spec.args, exc.field) if exc.field else "(arguments)"
            reason = f"schema_invalid: {shown_name(path, 120)}"
            if direct:  # the caller gets the typed error; the audit still gets its row
                step = StepRecord(
                    "tool", "invalid", tool=spec.name, capability=spec.capability, reason=reason
                )
                await r.commit(r.next_step(), step, "agent.tool", reason_code="schema_invalid")
                raise
            return await self._invalid(
                call,
                spec,
                f"{exc.field or 'arguments'}: {exc.detail}; fix the arguments and try again",
                reason,
            )
        decision = await r.policy_decision(spec, args)
        s.tool_calls += 1
        index = r.next_step()
        step = StepRecord(
            "tool", "", tool=spec.name, capability=spec.capability, decision=decision.outcome.value
        )
        if decision.outcome is Outcome.deny:
            step.status = "denied"
            step.reason = f"policy_denied: {decision.code} {spec.capability}"
            self.refuse(spec.name, f"not allowed: {decision.code}")
            self.tool_result(call, {"error": f"denied: {decision.reason}"}, is_error=True)
            await r.commit(index, step, "agent.tool", reason_code=decision.code)
            if direct:
                raise PolicyDenied(spec.name, decision.reason)
            return None
        if decision.outcome is Outcome.confirm:
            await self._pause(call, spec, args, decision.reason, index, step)
        await self._execute(call, spec, args, decision, index)
        return None

    async def _execute(
        self,
        call: dict[str, Any],
        spec: ActionSpec,
        args: dict[str, Any],
        decision: Decision,
        index: int,
    ) -> None:
        r = self.runner
        s = r.state
        effects = spec.safety is not Safety.read_only
        if effects:
            # At most once: after a crash this call is reported, never rerun. A read-only
            # call has no effects, so a crash simply leaves it pending and it runs again.
            # Its outcome is written at once too, so a crash never misreports it.
            s.in_flight = {"id": call["id"], "name": call["name"], "action": spec.name}
            await r.commit(durable=True)
        audit = r.audit_record(
            "agent.tool",
            status="pending",
            action=spec.name,
            capability=spec.capability,
            step_index=index,
            tool_kind=r.runtime.tool_kind_of(spec.name),
        )
        started = time.perf_counter()
        step = StepRecord(
            "tool",
            "ok",
            tool=spec.name,
            capability=spec.capability,
            decision=decision.outcome.value,
        )
        cancelled = StepRecord("tool", "cancelled", tool=spec.name, capability=spec.capability)

        async def record(
            row: Any, result: Any, failure: ToolExecutionError | None, text: str | None
        ) -> None:
            """The outcome, checkpointed before any after_tool_call observer runs."""
            r._current = None  # the step is answered: a cancel from here on must not undo it
            s.in_flight = None
            step.duration_ms = ms(started)
            if failure is not None:
                step.status = "error"
                self.tool_result(call, {"error": truncate(str(failure))}, is_error=True)
            else:
                s.citations.append({"tool": spec.name, "result": result})
                s.refused.pop(spec.name, None)  # the model made the call after all
                self.tool_result(call, result, text=text)
            await r.commit(index, step, extra_audits=(row,), durable=effects)

        self.executed = True
        try:
            with r.in_progress(index, cancelled):
                await execute(
                    r.kernel,
                    spec,
                    args,
                    actor=r.request.actor,
                    guild_id=r.request.guild_id,
                    channel_id=r.request.channel_id,
                    decision=decision,
                    audit=audit,
                    run_id=s.run_id,
                    call_id=call["id"],
                    config=await r.plugin_config(spec.plugin),
                    write_audit=False,
                    on_outcome=record,
                    channel_lister=r.request.visible_channels,
                    billing=r.request.billing,  # a tool's model calls bill as the run's do
                    places=places_of(r.request),
                )
        except ToolExecutionError:
            if s.mode == "direct":
                raise

    async def _invalid(
        self,
        call: dict[str, Any],
        spec: ActionSpec | None,
        message: str,
        reason: str,
        *,
        offered: bool = True,
    ) -> None:
        """``reason``: the class (and name or field path) the trace and the reply show;
        ``offered`` False: ``spec`` is a real action this run does not offer."""
        r = self.runner
        s, b = r.state, r.budgets
        key = spec.name if spec else call["name"]
        s.retries[key] = s.retries.get(key, 0) + 1
        s.invalid += 1
        klass, _, detail = reason.partition(": ")
        if klass == "schema_invalid":
            self.refuse(key, f"its arguments did not fit, at {detail}")
        else:
            self.refuse(key if spec else shown_name(key), WHY.get(klass, klass))
        if offered and spec is not None and s.retries[key] > b.max_retries_per_tool:
            r.toolset = r.toolset.without(spec.name)
            s.tools = r.toolset.names()
            message += f". No retries left for {spec.name}; it is no longer available in this run"
        self.tool_result(call, {"error": message}, is_error=True)
        step = StepRecord(
            "tool",
            "invalid",
            tool=spec.name if spec else None,
            capability=spec.capability if spec else None,
            reason=reason,
        )
        await r.commit(r.next_step(), step, "agent.tool", reason_code=klass)
        if s.invalid > b.max_invalid_calls:
            raise Stop.budget("invalid_tool_calls", b.max_invalid_calls)

    async def _pause(
        self,
        call: dict[str, Any],
        spec: ActionSpec,
        args: dict[str, Any],
        reason: str,
        index: int,
        step: StepRecord,
    ) -> None:
        r = self.runner
        s = r.state
        confirmation_id = new_id("conf")
        manifest = r.kernel.registry.manifests[spec.plugin]
        row = r.runtime.confirmations.row(
            confirmation_id,
            s.run_id,
            call["id"],
            spec.name,
            args,
            manifest.plugin.version,
            r.request.actor.id,
            r.budgets.confirmation_ttl_seconds,
        )
        s.awaiting = {
            **call,
            "action": spec.name,
            "arguments": args,
            "confirmation_id": confirmation_id,
        }
        s.pending = [c for c in s.pending if c.get("id") != call.get("id")]
        step.status = "needs_confirmation"
        # The confirmation is inserted by the pause write itself: if the run was cancelled
        # (or taken over) meanwhile, there is nothing anybody could approve.
        await r.commit(
            index,
            step,
            "agent.confirmation",
            status="awaiting_confirmation",
            durable=True,
            rows=((_INSERT_CONFIRMATION, row),),
        )
        prompt = ConfirmationPrompt(
            confirmation_id,
            s.run_id,
            spec.name,
            f"{spec.description} — {reason}.",
            row["expires_at"],
            confirmation_arguments(spec.args, args),
        )
        raise Paused(
            Reply(
                text="",
                run_id=s.run_id,
                status="awaiting_confirmation",
                citations=r.citations(),
                components=[prompt],
                refused=refused_lines(s),
            )
        )

    async def settle_confirmation(self, outcome: str, claim: Any = None) -> None:
        """Run the approved call exactly once, or record the rejection as its result."""
        r = self.runner
        owner = r.journal.owner
        awaiting = r.state.awaiting or {}
        # ``awaiting`` stays in the state until the call is answered or marked in flight: a
        # process dying before that leaves the decision for recovery to settle (``recovery``).
        if outcome != "approved":
            r.state.awaiting = None
            action = awaiting.get("action")
            if r.state.mode == "direct":  # the Stop's one sentence says it (it was said thrice)
                r.state.pending = [c for c in r.state.pending if c.get("id") != awaiting.get("id")]
            else:  # the model hears it; the reply's note names it whatever the model says
                self.tool_result(
                    awaiting,
                    {"error": f"the user {outcome} this call; it did not run"},
                    is_error=True,
                )
                self.refuse(str(action), WHY.get(f"confirm_{outcome}", outcome))
            step = StepRecord(
                "confirmation", outcome, tool=action, reason=f"confirm_{shown_name(outcome)}"
            )
            await r.commit(
                r.next_step(), step, "agent.confirmation", reason_code=f"confirm_{outcome}"
            )
            if r.state.mode == "direct":
                raise Stop(outcome, f"{awaiting.get('action')} was {outcome}; nothing ran.")
            return
        confirmations = r.runtime.confirmations
        spec = r.kernel.registry.actions.get(awaiting.get("action", ""))
        manifest = r.kernel.registry.manifests.get(spec.plugin) if spec else None
        same = (
            spec is not None
            and manifest is not None
            and manifest.plugin.version == claim.manifest_version
            and confirmations.args_hash(awaiting["arguments"]) == claim.args_hash
        )
        index = r.next_step()
        problem = None if same else "the action changed since it was proposed, so it was not run"
        if problem is None and spec is not None:
            # The guild may have changed while the call waited: the policy decides again.
            decision = await r.policy_decision(spec, awaiting["arguments"])
            if decision.outcome is Outcome.deny:
                problem = f"no longer allowed: {decision.reason}"
        if problem is not None or not await confirmations.move(
            claim.confirmation_id, "approved", "executing", owner=owner
        ):
            await confirmations.move(claim.confirmation_id, "approved", "failed", owner=owner)
            r.state.awaiting = None
            self.tool_result(
                awaiting,
                {"error": problem or "this confirmation is already being handled"},
                is_error=True,
            )
            self.refuse(str(awaiting.get("action")), WHY["confirm_failed"])
            step = StepRecord(
                "confirmation", "failed", tool=awaiting.get("action"), reason="confirm_failed"
            )
            await r.commit(index, step, "agent.confirmation", reason_code="confirm_failed")
            return
        assert spec is not None
        step = StepRecord(
            "confirmation",
            "approved",
            tool=spec.name,
            capability=spec.capability,
            decision="confirm",
        )
        try:  # from here the confirmation ends done or failed, whatever stops the run
            await r.commit(index, step, "agent.confirmation")
            r.state.awaiting = None  # the in-flight marker, written next, stands for it now
            await self._execute(
                awaiting,
                spec,
                awaiting["arguments"],
                Decision.allow("confirmed", "confirmed"),
                r.next_step(),
            )
        finally:  # "done" means the handler ran; a cancel before it leaves it "failed"
            outcome_state = "done" if self.executed else "failed"
            await confirmations.move(claim.confirmation_id, "executing", outcome_state, owner=owner)

    def refuse(self, name: str, why: str) -> None:
        """Remember a refused call for the reply's note (until the model makes it after all)."""
        refused = self.runner.state.refused
        if name in refused or len(refused) < MAX_REFUSED:
            refused[name] = why

    def tool_result(
        self,
        call: dict[str, Any],
        payload: Any,
        *,
        is_error: bool = False,
        text: str | None = None,
    ) -> None:
        """Answer a call; from here on it is no longer pending (even after a crash).

        ``text``: ``payload`` already dumped with sorted keys (the tool path's own dump)."""
        s = self.runner.state
        s.pending = [c for c in s.pending if c.get("id") != call.get("id")]
        if s.mode != "agent":
            if is_error:
                s.citations.append({"tool": call.get("action") or call["name"], "result": payload})
            return
        dumped = {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": text
            if text is not None
            else json.dumps(payload, ensure_ascii=False, sort_keys=True),
            "name": call["name"],
            "is_error": is_error is True,
        }
        if isinstance(dumped["tool_call_id"], str) and isinstance(dumped["name"], str | None):
            # What validation would check, checked: the stored form built directly; the next
            # model call parses the turn's tool results together (``Runner._typed_messages``).
            self.runner.add_message(None, dumped)
        else:
            message = ToolResultMessage(**dumped)
            self.runner.add_message(message, message.model_dump(mode="json"))
