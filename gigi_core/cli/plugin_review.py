"""``gigi plugins review``: upgrades' held-back actions in one server, and accepting them."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import complete_plugin_names, echo_json, with_kernel
from gigi_core.cli.review_text import visible
from gigi_core.errors import GigiError

DMS = "direct messages"


def held_lines(pending: list[Any]) -> list[str]:
    """One block per plugin version: each held-back action and what widened it (visible:
    a change may quote the plugin's manifest)."""
    lines = []
    for item in pending:
        lines.append(f"{item.plugin} {item.version}:")
        for action, change in item.actions:
            shown = f"every action of {item.plugin}" if action == "*" else action
            lines.append(f"  {shown}: {change}")
    return [visible(line) for line in lines]


@click.command("review")
@click.argument("plugin", required=False, shell_complete=complete_plugin_names)
@click.option("--guild", help="The server (guild id); without it, every server still waiting.")
@click.option(
    "--dm", is_flag=True, help="Direct messages: held observers there wait for your accept."
)
@click.option("--accept", is_flag=True, help="Turn the held-back actions on in this server.")
@click.option("--yes", "-y", is_flag=True, help="Accept without asking.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def review_command(
    kernel: Any,
    plugin: str | None,
    guild: str | None,
    dm: bool,
    accept: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """What upgraded plugins added or widened that stays off in a server until accepted.

    With ``--accept``, an admin turns those actions on in that server (per plugin version:
    a later upgrade that widens again is held back again). ``--dm`` does the same for direct
    messages, where only the operator decides: a held plugin's observers get no DM content
    until then.
    """
    if plugin is not None and plugin not in kernel.registry.manifests:
        import difflib

        loaded = sorted(kernel.registry.manifests)
        close = difflib.get_close_matches(plugin, loaded, n=3)
        guess = f"did you mean {', '.join(close)}? " if close else ""
        known = ", ".join(loaded) or "none"
        raise GigiError(f"no plugin named {plugin!r} is loaded", hint=f"{guess}loaded: {known}")
    if dm and guild is not None:
        raise click.UsageError("give --guild G or --dm, not both: each is accepted apart")
    from gigi_core.store.plugin_reviews import DM_ACCEPTS  # SQLAlchemy: not at start-up

    where, flag = (DMS, "--dm") if dm else (f"server {guild}", f"--guild {guild}")
    guild = DM_ACCEPTS if dm else guild
    if guild is None:
        if accept:
            raise click.UsageError(
                "--accept needs --guild G (each server accepts for itself) or --dm "
                "(direct messages)"
            )
        await _show_waiting(kernel, plugin, as_json)
        return
    pending = await kernel.reviews.pending(guild)
    if plugin is not None:
        pending = [p for p in pending if p.plugin == plugin]
    if not accept:
        if as_json:
            echo_json({"guild": guild, "pending": [p.as_dict() for p in pending]})
        elif pending:
            for line in held_lines(pending):
                click.echo(line)
            named = plugin or (pending[0].plugin if len(pending) == 1 else "PLUGIN")
            click.echo(f"Accept with: gigi plugins review {named} {flag} --accept")
        else:
            click.echo(f"Nothing is held back in {where}.")
        return
    if not pending:
        message = f"Nothing is held back in {where}; nothing to accept."
        if as_json:
            echo_json({"guild": guild, "accepted": []})
        else:
            click.echo(message)
        return
    if not as_json:
        for line in held_lines(pending):
            click.echo(line)
    if not yes:
        if as_json:
            raise click.UsageError("--json cannot ask: add --yes to accept")
        if not click.confirm(f"Turn these on in {where}?", default=False):
            raise click.ClickException("Nothing was accepted (add --yes to skip the question).")
    accepted = []
    for item in pending:
        await kernel.reviews.accept(guild, item.plugin, item.version, by="cli")
        accepted.append({"plugin": item.plugin, "version": item.version})
    if as_json:
        echo_json({"guild": guild, "accepted": accepted})
    else:
        names = ", ".join(f"{a['plugin']} {a['version']}" for a in accepted)
        click.echo(f"Accepted in {where}: {names}.")


async def _show_waiting(kernel: Any, plugin: str | None, as_json: bool) -> None:
    """Every server that has a held plugin enabled and has not accepted it."""
    from gigi_core.store.plugin_reviews import DM_ACCEPTS

    waiting = await kernel.reviews.waiting()
    dm_observers = {n for n, m in kernel.registry.manifests.items() if m.plugin.dm_events}
    in_dms = [p for p in await kernel.reviews.pending(DM_ACCEPTS) if p.plugin in dm_observers]
    if in_dms:
        waiting = {**waiting, DM_ACCEPTS: in_dms}
    if plugin is not None:
        waiting = {
            g: kept
            for g, items in waiting.items()
            if (kept := [i for i in items if i.plugin == plugin])
        }
    if as_json:
        echo_json({g: [i.as_dict() for i in items] for g, items in waiting.items()})
        return
    if not waiting:
        click.echo("No server with such a plugin enabled is waiting for a review.")
        return
    for guild, items in waiting.items():
        where = DMS if guild == DM_ACCEPTS else f"server {guild}"
        click.echo(f"{where}: " + ", ".join(f"{i.plugin} {i.version}" for i in items))
    click.echo("Details and accepting: gigi plugins review PLUGIN --guild G|--dm [--accept]")
