"""``gigi privacy export|delete``: a member's data across the kernel and every plugin."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import echo_json, with_kernel


@click.group("privacy")
def privacy_group() -> None:
    """Export or delete what Gigi and its plugins hold about one member."""


@privacy_group.command("export")
@click.option("--user", required=True, help="The member's user id.")
@click.option("--guild", help="Only this guild (default: every guild).")
@click.option("--output", type=click.Path(dir_okay=False, writable=True), help="Write to a file.")
@with_kernel
async def export(kernel: Any, user: str, guild: str | None, output: str | None) -> None:
    """Everything held about USER, as one JSON document."""
    import asyncio
    import json
    from pathlib import Path

    data = await kernel.privacy.export(user, guild)
    if output:
        text = json.dumps(data, indent=2, sort_keys=True, default=str)
        await asyncio.to_thread(Path(output).write_text, text + "\n", encoding="utf-8")
        click.echo(f"Wrote the data of user {user} to {output}.")
    else:
        echo_json(data)


@privacy_group.command("delete")
@click.option("--user", required=True, help="The member's user id.")
@click.option("--guild", help="Only this guild (default: every guild).")
@click.option("--yes", is_flag=True, help="Do it without asking (required without a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@with_kernel
async def delete(kernel: Any, user: str, guild: str | None, yes: bool, as_json: bool) -> None:
    """Delete everything held about USER; usage and audit rows keep a keyed pseudonym."""
    where = f"guild {guild}" if guild else "every guild"
    if not yes:
        import sys

        if not sys.stdin.isatty():
            raise click.UsageError("refusing to delete without --yes (no terminal to ask)")
        click.confirm(f"Delete everything Gigi holds about user {user} in {where}?", abort=True)
    counts = await kernel.privacy.delete(user, guild, by="operator")
    if as_json:
        echo_json(counts)
        return
    if not counts["total"]:
        click.echo(f"Nothing was held about user {user} in {where}; nothing was deleted.")
    else:
        click.echo(f"Deleted {counts['total']} item(s) about user {user} in {where}:")
        for owner, items in [("kernel", counts["kernel"]), *counts["plugins"].items()]:
            for name, n in sorted(items.items()):
                click.echo(f"  {owner}: {name}: {n}")
    for plugin, error in (counts.get("errors") or {}).items():
        click.echo(f"  {plugin} failed: {error}", err=True)


COMMANDS = [privacy_group]
