"""``gigi agent`` (list, trace, cancel, confirm, reject) and ``gigi ask``: the runtime from a shell."""

from __future__ import annotations

import sys
from typing import Any

import click

from gigi_core.cli.common import echo_json, table, with_kernel

ACT_AS = [
    click.option("--user", default="operator", show_default=True, help="Who acts."),
    click.option(
        "--admin/--no-admin", default=True, show_default=True, help="Act as a guild admin."
    ),
]


def _act_as(fn: Any) -> Any:
    for option in reversed(ACT_AS):
        fn = option(fn)
    return fn


def render_reply(reply: Any, as_json: bool) -> None:
    """Print a Reply for people (text, tool facts, prompts) or as JSON for programs.

    A failed run is an error: for people its text goes to stderr after ``Error:``, like
    every other error; with ``--json`` the object still goes to stdout.
    """
    if as_json:
        echo_json(
            {
                "run_id": reply.run_id,
                "status": reply.status,
                "termination_reason": reply.termination_reason,
                "text": reply.text,
                "citations": [{"tool": c.tool, "result": c.result} for c in reply.citations],
                "refused": list(reply.refused),
                "confirmations": [
                    {
                        "id": p.confirmation_id,
                        "action": p.action,
                        "summary": p.summary,
                        "arguments": p.arguments,
                        "expires_at": p.expires_at.isoformat(),
                    }
                    for p in reply.components
                ],
            }
        )
        return
    from gigi_core.agent.render import reply_chunks, run_footer

    failed = reply.status == "failed"
    for index, chunk in enumerate(reply_chunks(reply)):
        click.echo(f"Error: {chunk}" if failed and index == 0 else chunk, err=failed)
    footer = run_footer(reply)
    if footer:
        click.echo(footer, err=True)


@click.group("agent")
def agent_group() -> None:
    """Inspect and steer agent runs."""


RUN_STATUSES = ("running", "awaiting_confirmation", "done", "failed", "cancelled")


@agent_group.command("list")
@click.option("--guild", help="Only runs in this guild.")
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs with this status.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def list_runs(
    kernel: Any, guild: str | None, status: str | None, limit: int, as_json: bool
) -> None:
    """Recent runs, newest first (metadata only): id, status, kind, guild, who, when."""
    from sqlalchemy import select

    from gigi_core.store.agent_tables import AgentRun

    query = select(AgentRun).order_by(AgentRun.created_at.desc(), AgentRun.id.desc())
    if guild is not None:
        query = query.where(AgentRun.guild_id == guild)
    if status is not None:
        query = query.where(AgentRun.status == status)
    await kernel.db.writer.drain()  # runs written a moment ago by this process count too
    async with kernel.db.session() as s:
        found = (await s.scalars(query.limit(limit))).all()
    rows = [
        {
            "id": r.id,
            "status": r.status,
            "kind": r.kind,
            "guild_id": r.guild_id,
            "channel_id": r.channel_id,
            "actor_id": r.actor_id,
            "termination_reason": r.termination_reason,
            "steps": r.steps_used,
            "tool_calls": r.tool_calls_used,
            "llm_calls": r.llm_calls_used,
            "tokens": r.tokens_used,
            "created_at": r.created_at.isoformat(),
        }
        for r in found
    ]
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        r["guild"], r["actor"], r["reason"] = r["guild_id"], r["actor_id"], r["termination_reason"]
        r["created"] = r["created_at"][:19].replace("T", " ")
    table(rows, ["id", "status", "kind", "guild", "actor", "reason", "created"])


@agent_group.command("trace")
@click.argument("run", default="last")
@click.option("--guild", help="With `last`: the last run in this guild.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def trace(kernel: Any, run: str, guild: str | None, as_json: bool) -> None:
    """Show a run's steps and decisions (metadata only). RUN is a run id or `last`."""
    run_id = (await kernel.agent.runs.last(guild_id=guild)).id if run == "last" else run
    data = await kernel.agent.trace(run_id)
    if as_json:
        echo_json(data)
        return
    from gigi_core.agent.render import trace_lines

    for line in trace_lines(data):
        click.echo(line)


@agent_group.command("cancel")
@click.argument("run")
@_act_as
@with_kernel
async def cancel(kernel: Any, run: str, user: str, admin: bool) -> None:
    """Cancel an active run; its pending confirmation is rejected."""
    from gigi_core.policy.actor import Actor

    if await kernel.agent.cancel(run, Actor(id=user, is_admin=admin)):
        click.echo(f"Cancelled run {run}.")
    else:
        click.echo(f"Run {run} was not active; nothing changed.")


def _run_verb(name: str, method: str, doc: str) -> None:
    """``recover``, ``confirm`` and ``reject`` differ only in the runtime method they call."""

    @agent_group.command(name, help=doc)
    @click.argument("run")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    @_act_as
    @with_kernel
    async def command(kernel: Any, run: str, user: str, admin: bool, as_json: bool) -> None:
        from gigi_core.policy.actor import Actor

        reply = await getattr(kernel.agent, method)(run, Actor(id=user, is_admin=admin))
        render_reply(reply, as_json)


_run_verb(
    "recover",
    "recover",
    "Continue a run a crashed process left running; a call it was executing is not rerun.",
)
_run_verb(
    "confirm", "confirm", "Approve RUN's pending call: it runs exactly once, then the run resumes."
)
_run_verb(
    "reject", "reject", "Reject RUN's pending call: it never runs; the run resumes without it."
)


@click.command("ask")
@click.argument("question")
@click.option("--guild", default="console", show_default=True, help="Guild id.")
@click.option("--channel", default="console", show_default=True, help="Channel id.")
@click.option("--user", default="operator", show_default=True, help="Who asks.")
@click.option("--admin/--no-admin", default=True, show_default=True, help="Ask as a guild admin.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def ask(
    kernel: Any, question: str, guild: str, channel: str, user: str, admin: bool, as_json: bool
) -> None:
    """Run one request through the agent runtime and print the reply."""
    from gigi_core.agent.contracts import Request
    from gigi_core.policy.actor import Actor

    request = Request(
        actor=Actor(id=user, is_admin=admin),
        guild_id=guild,
        channel_id=channel,
        kind="console",
        text=question,
        surface="shell",
    )
    reply = await kernel.agent.handle(request)
    render_reply(reply, as_json)
    if reply.status == "failed":
        sys.exit(1)


COMMANDS = [agent_group, ask]
