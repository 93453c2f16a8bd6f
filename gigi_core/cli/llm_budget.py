"""``gigi llm budget``: set, show, reset and remove a guild's model budgets.

A budget is named by its guild, its scope (none for the whole guild, or one of
``--member``, ``--channel``, ``--role``, ``--model``) and its ``--window``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from gigi_core.cli.common import UsageFailure, echo_json, table, with_kernel
from gigi_core.llm.budget_windows import WINDOWS


def _scope_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--guild", required=True, help="Guild (server) id."),
        click.option("--member", help="A member's id, or * for each member on their own."),
        click.option("--channel", help="A channel's id, or * for each channel on its own."),
        click.option("--role", help="A role's id: shared by the members who hold it."),
        click.option("--model", help="A provider (openai) or provider/model (openai/gpt-4o)."),
        click.option("--plugin", help="A plugin's own allowance (e.g. ambient's daily one)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _window_option(default: str | None) -> Any:
    return click.option(
        "--window",
        type=click.Choice(WINDOWS),
        default=default,
        required=default is None,
        show_default=default is not None,
        help="The budget's window.",
    )


def _scope(
    member: str | None,
    channel: str | None,
    role: str | None,
    model: str | None,
    plugin: str | None = None,
) -> tuple[str, str | None]:
    given = [
        (kind, value)
        for kind, value in (
            ("member", member),
            ("channel", channel),
            ("role", role),
            ("model", model),
            ("plugin", plugin),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise UsageFailure("give at most one of --member, --channel, --role, --model, --plugin")
    return given[0] if given else ("guild", None)


@click.group("budget")
def budget_group() -> None:
    """Model budgets per guild, member, channel, role, provider/model or plugin (tokens or
    money)."""


@budget_group.command("set")
@_scope_options
@_window_option("daily")
@click.option(
    "--limit",
    required=True,
    help="Tokens per window; with --unit money, an amount of the profiles' currency (2.50).",
)
@click.option("--unit", type=click.Choice(["tokens", "money"]), default="tokens", show_default=True)
@click.option("--reset-hour", type=click.IntRange(0, 23), help="UTC hour the window starts (0).")
@click.option("--exempt-role", "exempt_roles", multiple=True, help="A role the budget skips.")
@click.option("--clear-exempt-roles", is_flag=True, help="No role is exempt any more.")
@click.option(
    "--exempt-admins/--no-exempt-admins", default=None, help="Whether admins skip it (they do)."
)
@click.option("--by", help="Who did it (for the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def budget_set(
    kernel: Any,
    guild: str,
    member: str | None,
    channel: str | None,
    role: str | None,
    model: str | None,
    plugin: str | None,
    window: str,
    limit: str,
    unit: str,
    reset_hour: int | None,
    exempt_roles: tuple[str, ...],
    clear_exempt_roles: bool,
    exempt_admins: bool | None,
    by: str | None,
    as_json: bool,
) -> None:
    """Create or change a budget; its spend in the current window is kept."""
    kind, ident = _scope(member, channel, role, model, plugin)
    if exempt_roles and clear_exempt_roles:
        raise UsageFailure("give --exempt-role or --clear-exempt-roles, not both")
    roles: list[str] | None = [] if clear_exempt_roles else (list(exempt_roles) or None)
    from gigi_core.llm.budget_money import parse_limit

    budget = await kernel.llm.set_budget(
        guild,
        kind,
        ident,
        limit=parse_limit(limit, unit),
        window=window,
        unit=unit,
        reset_hour=reset_hour,
        exempt_roles=roles,
        exempt_admins=exempt_admins,
        by=by,
    )
    if as_json:
        echo_json(budget.as_dict())
        return
    exempt = ", ".join(budget.exempt_roles) or "no roles"
    admins = "admins exempt" if budget.exempt_admins else "admins held too"
    click.echo(
        f"{budget.describe()} {budget.window} budget in guild {guild}: "
        f"{budget.show(budget.limit)}, resets at {budget.reset_hour:02d}:00 UTC; exempt: {exempt}; {admins}."
    )


@budget_group.command("show")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def budget_show(kernel: Any, guild: str, as_json: bool) -> None:
    """Every budget of a guild: its current window's spend, holds and what is left."""
    rows = [s.as_dict() for s in await kernel.llm.budget_status(guild)]
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        row["scope"] = row["scope_kind"] + (f" {row['scope_id']}" if row["scope_id"] else "")
        row["left"] = "each its own" if row["left"] is None else row["left"]
        row["exempt"] = ",".join(row["exempt_roles"]) + (
            "" if not row["exempt_admins"] else " +admins"
        )
    table(
        rows,
        ["scope", "window", "limit", "spent", "reserved", "left", "resets_at", "exempt"],
    )
    from gigi_core.llm.budget_alerts import staff_channel

    channel = await staff_channel(kernel, guild)
    if channel is not None:
        click.echo(f"Alerts at 80, 95 and 100 % of a window go to channel {channel}.")
    else:
        click.echo(
            "No staff channel is set, so budget alerts (80, 95, 100 %) are not posted: set "
            f"`staff_channel` in the gigi plugin's config (`gigi plugins config gigi --guild "
            f'{guild} --set-json \'{{"staff_channel": "CHANNEL_ID"}}\'`; --set-json '
            "replaces the whole config, so keep any `retrieval` block in it)."
        )


@budget_group.command("reset")
@_scope_options
@_window_option(None)
@click.option("--subject", help="For a * budget: reset only this member or channel.")
@click.option("--by", help="Who did it (for the audit log).")
@with_kernel
async def budget_reset(
    kernel: Any,
    guild: str,
    member: str | None,
    channel: str | None,
    role: str | None,
    model: str | None,
    plugin: str | None,
    window: str,
    subject: str | None,
    by: str | None,
) -> None:
    """Forget the current window's spend (calls in flight keep what they hold)."""
    kind, ident = _scope(member, channel, role, model, plugin)
    rows = await kernel.llm.reset_budget(guild, kind, ident, window, subject=subject, by=by)
    click.echo(f"reset {rows} window counter(s) of the {kind} {window} budget in guild {guild}.")


@budget_group.command("remove")
@_scope_options
@_window_option(None)
@click.option("--by", help="Who did it (for the audit log).")
@with_kernel
async def budget_remove(
    kernel: Any,
    guild: str,
    member: str | None,
    channel: str | None,
    role: str | None,
    model: str | None,
    plugin: str | None,
    window: str,
    by: str | None,
) -> None:
    """Remove a budget and its counters; calls stop meeting it at once."""
    kind, ident = _scope(member, channel, role, model, plugin)
    budget = await kernel.llm.remove_budget(guild, kind, ident, window, by=by)
    click.echo(f"removed the {budget.describe()} {budget.window} budget in guild {guild}.")
