"""Compare what a case observed with what it expects; every mismatch is one readable line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gigi_core.agent.contracts import Reply
from gigi_core.evalharness.models import AuditMatch, Expect, StepMatch
from gigi_core.evalharness.transport import Seen
from gigi_core.manifest.models import wire_name

PATTERN = "pattern:"


@dataclass
class Observation:
    """A snapshot after one action: its reply or error, the run's trace, audit, executions."""

    reply: Reply | None = None
    error: str | None = None
    cancelled: bool | None = None
    trace: dict[str, Any] | None = None
    audit: list[dict[str, Any]] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    proposed: list[str] = field(default_factory=list)


def text_matches(expected: str, actual: str) -> bool:
    if expected.startswith(PATTERN):
        return re.search(expected[len(PATTERN) :].strip(), actual, re.DOTALL) is not None
    return expected == actual


def check(expect: Expect, obs: Observation) -> list[str]:
    """Every way ``obs`` differs from ``expect``; empty means it matches."""
    problems: list[str] = []
    _error(expect, obs, problems)
    trace = obs.trace or {}
    _same(problems, "run status", expect.status, trace.get("status"))
    _same(
        problems, "termination reason", expect.termination_reason, trace.get("termination_reason")
    )
    _same(problems, "cancelled", expect.cancelled, obs.cancelled)
    _reply(expect, obs, problems)
    _model(expect, obs, problems)
    _same(problems, "executed handlers", expect.executed, obs.executed)
    for action, count in expect.executed_count.items():
        _same(problems, f"times {action} ran", count, obs.executed.count(action))
    tool_steps = [s for s in trace.get("steps", []) if s["kind"] == "tool"]
    if expect.decisions is not None:
        _matches(problems, "tool steps", expect.decisions, tool_steps, StepMatch)
    if expect.step_kinds is not None:
        _same(
            problems, "step kinds", expect.step_kinds, [s["kind"] for s in trace.get("steps", [])]
        )
    if expect.confirmations is not None:
        states = [c["state"] for c in trace.get("confirmations", [])]
        _same(problems, "confirmation states", expect.confirmations, states)
    used = trace.get("budgets_used", {})
    for name, value in expect.budgets_used.items():
        _same(problems, f"budget used: {name}", value, used.get(name))
    _audit(expect, obs, problems)
    return problems


def _error(expect: Expect, obs: Observation, problems: list[str]) -> None:
    if expect.error is None:
        if obs.error is not None:
            problems.append(f"unexpected error: {obs.error}")
    elif obs.error is None:
        problems.append(f"expected an error matching {expect.error!r}, but nothing was raised")
    elif not text_matches(_as_pattern(expect.error), obs.error):
        problems.append(f"error: expected {expect.error!r}, got {obs.error!r}")


def _as_pattern(value: str) -> str:
    """Errors match as substrings unless written as ``pattern:``."""
    return value if value.startswith(PATTERN) else PATTERN + re.escape(value)


def _reply(expect: Expect, obs: Observation, problems: list[str]) -> None:
    wants = (
        expect.reply is not None
        or expect.reply_contains
        or expect.reply_status is not None
        or expect.citations is not None
    )
    if not wants:
        return
    if obs.reply is None:
        problems.append("expected a reply, but there was none")
        return
    if expect.reply is not None and not text_matches(expect.reply, obs.reply.text):
        problems.append(_text_diff("reply", expect.reply, obs.reply.text))
    full = obs.reply.full_text()
    for piece in expect.reply_contains:
        if piece not in full:
            problems.append(f"reply does not contain {piece!r}; full reply: {full!r}")
    _same(problems, "reply status", expect.reply_status, obs.reply.status)
    _same(problems, "citations", expect.citations, [c.tool for c in obs.reply.citations])


def _model(expect: Expect, obs: Observation, problems: list[str]) -> None:
    _same(problems, "model calls", expect.model_calls, len(obs.seen))
    _same(problems, "proposed tool calls", expect.proposed, obs.proposed)
    if expect.offered is not None:
        if not obs.seen:
            problems.append("offered tools: the model was never called")
        else:
            offered = set(obs.seen[0].tools)
            for action in expect.offered.includes:
                if wire_name(action) not in offered:
                    problems.append(f"{action} was not offered; offered: {sorted(offered)}")
            for action in expect.offered.excludes:
                if wire_name(action) in offered:
                    problems.append(f"{action} was offered but must not be")
    fed = [r for s in obs.seen[-1:] for r in s.tool_results]
    for pattern in expect.feedback:
        if not any(text_matches(_as_pattern(pattern), r) for r in fed):
            problems.append(f"no tool result fed back to the model matches {pattern!r}; got {fed}")
    for pattern in expect.feedback_absent:
        hits = [r for r in fed if text_matches(_as_pattern(pattern), r)]
        if hits:
            problems.append(f"a tool result fed back to the model matches {pattern!r}: {hits}")
    choices = [s.tool_choice for s in obs.seen]
    if expect.tool_choice is not None:
        wanted = [wire_name(c) if c else None for c in expect.tool_choice]
        _same(problems, "forced tool choice per model call", wanted, choices)


def _audit(expect: Expect, obs: Observation, problems: list[str]) -> None:
    for want in expect.audit:
        if not any(_fits(want, row) for row in obs.audit):
            problems.append(f"no audit row matches {_short(want)}; rows: {_rows(obs.audit)}")
    for banned in expect.audit_absent:
        if any(_fits(banned, row) for row in obs.audit):
            problems.append(f"an audit row matches {_short(banned)} but must not exist")


def _fits(want: AuditMatch | StepMatch, row: dict[str, Any]) -> bool:
    return all(row.get(k) == v for k, v in want.model_dump(exclude_none=True).items())


def _matches(
    problems: list[str], label: str, wanted: list[Any], rows: list[dict[str, Any]], _: type
) -> None:
    if len(wanted) != len(rows) or not all(_fits(w, r) for w, r in zip(wanted, rows, strict=False)):
        problems.append(
            f"{label}: expected {[_short(w) for w in wanted]}, got "
            f"{[{k: r.get(k) for k in ('tool', 'decision', 'status')} for r in rows]}"
        )


def _same(problems: list[str], label: str, expected: Any, actual: Any) -> None:
    if expected is not None and expected != actual:
        problems.append(f"{label}: expected {expected!r}, got {actual!r}")


def _short(model: AuditMatch | StepMatch) -> dict[str, Any]:
    return model.model_dump(exclude_none=True)


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return [f"{r['kind']}/{r['status']}/{r.get('action') or '-'}" for r in rows]


def _text_diff(label: str, expected: str, actual: str) -> str:
    if "\n" not in expected + actual:
        return f"{label}: expected {expected!r}, got {actual!r}"
    import difflib

    diff = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "expected", "actual", lineterm=""
    )
    return f"{label} differs:\n" + "\n".join(diff)
