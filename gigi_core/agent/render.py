"""Plain-text rendering of replies and run traces, shared by `gigi` commands and the console.

One renderer keeps what an operator sees in `gigi ask`, `gigi agent trace` and the console
REPL the same; surfaces with richer widgets (Discord) render ``Reply`` themselves.
"""

from __future__ import annotations

from typing import Any


def reply_chunks(reply: Any) -> list[str]:
    """The reply's text, tool facts (verbatim) and confirmation prompts, in message chunks."""
    return list(reply.chunks())


def run_footer(reply: Any) -> str | None:
    """``(run ID: status)`` so a person can trace, confirm or cancel the run later."""
    return f"(run {reply.run_id}: {reply.status})" if reply.run_id else None


def trace_lines(data: dict[str, Any]) -> list[str]:
    """A run's steps and decisions (metadata only) as ``AgentRuntime.trace`` returns them."""
    used = data["budgets_used"]
    lines = [
        f"run {data['run_id']} [{data['kind']}] {data['status']}"
        f" ({data['termination_reason'] or 'in progress'}) guild {data['guild_id']}"
        f" actor {data['actor_id']}",
        f"  used: {used['steps']} steps, {used['tool_calls']} tool calls, "
        f"{used['llm_calls']} model calls, {used['tokens']} tokens",
    ]
    for step in data["steps"]:
        tokens = (
            f" tokens {step['input_tokens']}/{step['output_tokens']}"
            if step["input_tokens"] is not None
            else ""
        )
        tool = f" {step['tool']}" if step["tool"] else ""
        decision = f" {step['decision']}" if step["decision"] else ""
        lines.append(
            f"  {step['index']:>3} {step['kind']}{tool}{decision} -> {step['status']}{tokens}"
        )
    for c in data["confirmations"]:
        lines.append(f"  confirmation {c['id']} {c['action']}: {c['state']}")
    if data.get("context"):
        lines += context_lines(data["context"])
    return lines


def context_lines(ctx: dict[str, Any]) -> list[str]:
    """What the context broker did for a run: paths, hits, what the pack kept (ids only)."""
    lines = [f"  context {ctx.get('mode')}: sources {', '.join(ctx.get('sources') or []) or '-'}"]
    channel = ctx.get("channel")
    if channel:
        why = f" ({channel['reason']})" if channel.get("reason") else ""
        lines.append(f"    channel: {channel.get('hits', 0)} messages{why}")
    for name, path in ((ctx.get("retrieval") or {}).get("paths") or {}).items():
        extra = "".join(
            f", {path[k]} {k.replace('_', ' ')}"
            for k in ("out_of_scope", "malformed")
            if path.get(k)
        )
        lines.append(f"    path {name}: {path.get('status')}, {path.get('hits', 0)} hits{extra}")
    tokens = ctx.get("tokens") or {}
    lines.append(
        f"    kept {len(ctx.get('kept') or [])}, dropped {len(ctx.get('dropped') or [])}, "
        f"unchanged {len(ctx.get('unchanged') or [])}, withdrawn {len(ctx.get('withdrawn') or [])}"
        f"; {tokens.get('used', 0)}/{tokens.get('budget', 0)} tokens"
    )
    if ctx.get("kept"):
        lines.append(f"    kept: {', '.join(ctx['kept'])}")
    if ctx.get("dropped"):
        lines.append(f"    dropped: {', '.join(ctx['dropped'])}")
    return lines


def followed_job(reply: Any) -> str | None:
    """The job a command's result asks the surface to follow (``{"job": {"id", "follow"}}``)."""
    for citation in reply.citations:
        result = citation.result
        job = result.get("job") if isinstance(result, dict) else None
        if isinstance(job, dict) and job.get("follow") is True and isinstance(job.get("id"), str):
            return job["id"]
    return None
