"""``gigi llm models`` (what a credential can call) and ``gigi llm failover set|show|clear``
(what a failing call moves on to, inside one owner)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from gigi_core.cli.common import echo_json, table, with_kernel
from gigi_core.llm.errors import ERROR_CLASSES, FAILOVER_DEFAULT_ON
from gigi_core.llm.records import PURPOSES

_OWNER_HELP = "Who owns (and pays for) it: tenant, guild:ID or user:ID."


@click.command("models")
@click.option("--owner", required=True, metavar="tenant|guild:ID|user:ID", help=_OWNER_HELP)
@click.option(
    "--credential", required=True, help="The credential's label (or its provider's name)."
)
@click.option("--refresh", is_flag=True, help="Ask the provider now, not the cached list.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def models_command(
    kernel: Any, owner: str, credential: str, refresh: bool, as_json: bool
) -> None:
    """The models a credential can call, from its provider's models endpoint (cached)."""
    found = await kernel.llm.list_models(owner, credential, refresh=refresh)
    if as_json:
        echo_json(found.as_dict())
        return
    when = datetime.fromtimestamp(found.fetched_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    source = f"cached, fetched {when}" if found.cached else f"fetched {when}"
    click.echo(
        f"{len(found.models)} models for {found.label} ({found.provider}) of {found.owner}; "
        f"{source}."
    )
    rows = [
        {
            "id": m.id,
            "name": m.display_name or "-",
            "context": m.context_window if m.context_window is not None else "-",
            "kinds": ", ".join(m.kinds) or "-",
        }
        for m in found.models
    ]
    if rows:
        table(rows, ["id", "name", "context", "kinds"])


@click.group("failover")
def failover_group() -> None:
    """What a failing call moves on to: the owner's own credentials, in order."""


@failover_group.command("set")
@click.option("--owner", required=True, metavar="tenant|guild:ID|user:ID", help=_OWNER_HELP)
@click.option("--purpose", required=True, type=click.Choice(PURPOSES))
@click.option(
    "--order",
    required=True,
    metavar="LABEL[:MODEL],...",
    help="The owner's credentials to try after the profile's, in order; :MODEL picks the "
    "model there (default: the profile's).",
)
@click.option(
    "--on",
    "on",
    metavar="CLASS,...",
    help=f"Error classes that move on (default {','.join(FAILOVER_DEFAULT_ON)}; any of "
    f"{', '.join(ERROR_CLASSES)}).",
)
@click.option("--by", help="Who did it (for the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def failover_set(
    kernel: Any, owner: str, purpose: str, order: str, on: str | None, by: str | None, as_json: bool
) -> None:
    """Replace the owner's failover list for a purpose."""
    plan = await kernel.llm.set_failover(owner, purpose, order, on, by=by)
    if as_json:
        echo_json(plan.as_dict())
        return
    click.echo(f"{plan.owner} {plan.describe()}.")


@failover_group.command("show")
@click.option("--owner", required=True, metavar="tenant|guild:ID|user:ID", help=_OWNER_HELP)
@click.option("--purpose", type=click.Choice(PURPOSES), help="Only this purpose.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def failover_show(kernel: Any, owner: str, purpose: str | None, as_json: bool) -> None:
    """The owner's failover lists."""
    plans = await kernel.llm.failover(owner, purpose)
    if as_json:
        echo_json([p.as_dict() for p in plans])
        return
    if not plans:
        click.echo(f"No failover list for {owner} (`gigi llm failover set`).")
        return
    for plan in plans:
        click.echo(f"{plan.owner} {plan.describe()}.")


@failover_group.command("clear")
@click.option("--owner", required=True, metavar="tenant|guild:ID|user:ID", help=_OWNER_HELP)
@click.option("--purpose", required=True, type=click.Choice(PURPOSES))
@click.option("--by", help="Who did it (for the audit log).")
@with_kernel
async def failover_clear(kernel: Any, owner: str, purpose: str, by: str | None) -> None:
    """Remove the owner's failover list for a purpose: failures are reported as they come."""
    await kernel.llm.clear_failover(owner, purpose, by=by)
    click.echo(f"Removed the {purpose} failover list of {owner}.")
