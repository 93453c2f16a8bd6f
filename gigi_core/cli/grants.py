"""``gigi grants``: who holds which capability in a guild."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import UsageFailure, echo_json, table, with_kernel


def _subject(user: str | None, role: str | None) -> tuple[str, str]:
    if bool(user) == bool(role):
        raise UsageFailure("give exactly one of --user or --role")
    return ("user", user) if user else ("role", role)  # type: ignore[return-value]


@click.group("grants")
def grants_group() -> None:
    """Grant capabilities to users or roles, per guild."""


def _subject_options(fn: Any) -> Any:
    fn = click.option("--role", help="Role id.")(fn)
    fn = click.option("--user", help="User id.")(fn)
    return click.option("--guild", required=True, help="Guild (server) id.")(fn)


@grants_group.command("add")
@click.argument("capability")
@_subject_options
@click.option("--by", help="Who granted it (for the audit log).")
@with_kernel
async def add(
    kernel: Any, capability: str, guild: str, user: str | None, role: str | None, by: str | None
) -> None:
    """Grant CAPABILITY (or a wildcard such as dice.*) to a user or a role."""
    kind, subject = _subject(user, role)
    created = await kernel.add_grant(guild, capability, kind, subject, by=by)
    click.echo(
        f"{'Granted' if created else 'Already granted:'} {capability} to {kind} {subject} in guild {guild}."
    )


@grants_group.command("remove")
@click.argument("capability")
@_subject_options
@click.option("--by", help="Who revoked it (for the audit log).")
@with_kernel
async def remove(
    kernel: Any, capability: str, guild: str, user: str | None, role: str | None, by: str | None
) -> None:
    """Revoke a grant."""
    kind, subject = _subject(user, role)
    await kernel.remove_grant(guild, capability, kind, subject, by=by)
    click.echo(f"Revoked {capability} from {kind} {subject} in guild {guild}.")


@grants_group.command("list")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def list_grants(kernel: Any, guild: str, as_json: bool) -> None:
    """Grants stored for a guild."""
    rows = [
        {
            "capability": g.capability,
            "subject_type": g.subject_type,
            "subject_id": g.subject_id,
            "granted_by": g.granted_by,
            "created_at": g.created_at.isoformat(),
        }
        for g in await kernel.grants.list(guild)
    ]
    if as_json:
        echo_json(rows)
    else:
        table(rows, ["capability", "subject_type", "subject_id", "granted_by"])


COMMANDS = [grants_group]
