"""``gigi audit list``: the audit log for the shell, the same view the web dashboard reads."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import (
    UsageFailure,
    complete_action_names,
    echo_json,
    table,
    with_kernel,
)

COLUMNS = ["id", "created_at", "kind", "status", "actor_id", "guild_id", "action", "capability"]


@click.group("audit")
def audit_group() -> None:
    """Read the audit log: who did what, when, and with what outcome (metadata only)."""


@audit_group.command("list")
@click.option("--guild", help="Only this guild (server) id.")
@click.option("--actor", help="Only rows of this user id.")
@click.option(
    "--action",
    help="A kind (grant.add, plugin.enable) or an action (memory.count).",
    shell_complete=complete_action_names,
)
@click.option("--outcome", help="A status or decision: ok, error, deny, confirm ...")
@click.option("--since", help="Only newer rows: 7d, 24h or an ISO date.")
@click.option(
    "--limit", type=int, default=50, show_default=True, help="Rows per page (at most 500)."
)
@click.option("--before", "before_id", type=int, help="Rows older than this id (next page).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def list_audit(
    kernel: Any,
    guild: str | None,
    actor: str | None,
    action: str | None,
    outcome: str | None,
    since: str | None,
    limit: int,
    before_id: int | None,
    as_json: bool,
) -> None:
    """The newest audit rows matching the filters; --before pages back."""
    from gigi_core.llm.usage import parse_since
    from gigi_core.store.audit_query import MAX_PAGE, AuditFilter, query_audit

    start = parse_since(since)  # a bad value names --since and shows the accepted forms
    if not 1 <= limit <= MAX_PAGE:
        raise UsageFailure(f"--limit must be between 1 and {MAX_PAGE}")
    wanted = AuditFilter(
        guild_id=guild,
        actor_id=actor,
        action=action,
        outcome=outcome,
        since=start,
        before_id=before_id,
        limit=limit,
    )
    page = await query_audit(kernel.db, wanted)
    if as_json:
        echo_json({"rows": page.rows, "next_before": page.next_before_id})
        return
    table(page.rows, COLUMNS)
    if page.next_before_id is not None:
        click.echo(f"More rows: add --before {page.next_before_id}")


COMMANDS = [audit_group]
