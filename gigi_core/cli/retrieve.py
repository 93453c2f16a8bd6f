"""``gigi retrieve``: run the retrieval engine and the pack builder from a shell.

For admins and plugin authors checking what a member's question would put in front of the
model. A shell cannot ask Discord what the member sees, so ``--channel`` names the
channels to treat as visible (none: only personal-mode items).
"""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import echo_json, table, with_kernel
from gigi_core.context.modes import MODES


@click.command("retrieve")
@click.argument("query")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--user", required=True, help="The member asking.")
@click.option("--role", "roles", multiple=True, help="A role the member holds (repeatable).")
@click.option("--admin", is_flag=True, help="The member is a guild admin.")
@click.option(
    "--channel",
    "channels",
    multiple=True,
    help="A channel the member can see (repeatable); the first is the current one.",
)
@click.option("--mode", type=click.Choice(MODES), default="auto", show_default=True)
@click.option(
    "--no-model", is_flag=True, help="Plan deterministically, even with a routing profile."
)
@click.option(
    "--json", "as_json", is_flag=True, help="The pack, its trace and the ranking as JSON."
)
@with_kernel
async def retrieve_command(
    kernel: Any,
    query: str,
    guild: str,
    user: str,
    roles: tuple[str, ...],
    admin: bool,
    channels: tuple[str, ...],
    mode: str,
    no_model: bool,
    as_json: bool,
) -> None:
    """Show which paths answer QUERY for a member, the merged ranking and the pack."""
    from gigi_core.context.broker import build_context
    from gigi_core.policy.actor import Actor

    pack = await build_context(
        kernel,
        actor=Actor(id=user, roles=frozenset(roles), is_admin=admin),
        guild_id=guild,
        channel_id=channels[0] if channels else None,
        visible_channels=frozenset(channels),
        text=query,
        mode=mode,
        use_model=not no_model,
    )
    trace = pack.trace()
    if as_json:
        echo_json({"pack": pack.render(), "labels": pack.labels, "trace": trace})
        return
    retrieval = trace.get("retrieval") or {}
    click.echo(f"sources: {', '.join(trace['sources']) or 'none'}")
    plan = retrieval.get("plan")
    if plan:
        click.echo(f"plan: {plan['source']}, intent {plan['intent']}, clipped {plan['clipped']}")
    rows = [{"path": name, **report} for name, report in retrieval.get("paths", {}).items()]
    if rows:
        table(rows, ["path", "status", "hits", "out_of_scope", "malformed", "ms", "reason"])
    merged = retrieval.get("merged", [])
    if merged:
        click.echo("")
        table([{**m, "paths": ",".join(m["paths"])} for m in merged], ["id", "score", "paths"])
    click.echo("")
    click.echo(pack.render() or "(empty pack)")
    tokens = trace["tokens"]
    click.echo(
        f"\n{len(trace['kept'])} kept, {len(trace['dropped'])} dropped for budget; "
        f"{tokens['used']}/{tokens['budget']} tokens"
    )


COMMANDS = [retrieve_command]
