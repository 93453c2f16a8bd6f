"""``gigi plugins review``: upgrades' held-back actions in one server, and accepting them."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import complete_plugin_names, echo_json, with_kernel
from gigi_core.errors import GigiError


def held_lines(pending: list[Any]) -> list[str]:
    """One block per plugin version: each held-back action and what widened it."""
    lines = []
    for item in pending:
        lines.append(f"{item.plugin} {item.version}:")
        for action, change in item.actions:
            shown = f"every action of {item.plugin}" if action == "*" else action
            lines.append(f"  {shown}: {change}")
    return lines


@click.command("review")
@click.argument("plugin", required=False, shell_complete=complete_plugin_names)
@click.option("--guild", help="The server (guild id); without it, every server still waiting.")
@click.option("--accept", is_flag=True, help="Turn the held-back actions on in this server.")
@click.option("--yes", "-y", is_flag=True, help="Accept without asking.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def review_command(
    kernel: Any,
    plugin: str | None,
    guild: str | None,
    accept: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """What upgraded plugins added or widened that stays off in a server until accepted.

    With ``--accept``, an admin turns those actions on in that server (per plugin version:
    a later upgrade that widens again is held back again).
    """
    if plugin is not None and plugin not in kernel.registry.manifests:
        import difflib

        loaded = sorted(kernel.registry.manifests)
        close = difflib.get_close_matches(plugin, loaded, n=3)
        guess = f"did you mean {', '.join(close)}? " if close else ""
        known = ", ".join(loaded) or "none"
        raise GigiError(f"no plugin named {plugin!r} is loaded", hint=f"{guess}loaded: {known}")
    if guild is None:
        if accept:
            raise click.UsageError("--accept needs --guild G: each server accepts for itself")
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
            click.echo(f"Accept with: gigi plugins review {named} --guild {guild} --accept")
        else:
            click.echo(f"Nothing is held back in server {guild}.")
        return
    if not pending:
        message = f"Nothing is held back in server {guild}; nothing to accept."
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
        if not click.confirm(f"Turn these on in server {guild}?", default=False):
            raise click.ClickException("Nothing was accepted (add --yes to skip the question).")
    accepted = []
    for item in pending:
        await kernel.reviews.accept(guild, item.plugin, item.version, by="cli")
        accepted.append({"plugin": item.plugin, "version": item.version})
    if as_json:
        echo_json({"guild": guild, "accepted": accepted})
    else:
        names = ", ".join(f"{a['plugin']} {a['version']}" for a in accepted)
        click.echo(f"Accepted in server {guild}: {names}.")


async def _show_waiting(kernel: Any, plugin: str | None, as_json: bool) -> None:
    """Every server that has a held plugin enabled and has not accepted it."""
    waiting = await kernel.reviews.waiting()
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
        click.echo(f"server {guild}: " + ", ".join(f"{i.plugin} {i.version}" for i in items))
    click.echo("Details and accepting: gigi plugins review PLUGIN --guild G [--accept]")
