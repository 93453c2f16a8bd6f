"""``gigi commands list``: every manifest-declared command with its action and capability."""

from __future__ import annotations

import click

from gigi_core.cli.common import CliState, echo_json, pass_state, table


@click.group("commands")
def commands_group() -> None:
    """Plugin commands (slash commands on Discord, /ROOT SUB in the console)."""


@commands_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_state
def list_commands(state: CliState, as_json: bool) -> None:
    """Every command of every loaded plugin, with the action it runs and its capability."""
    from gigi_core.commands import build_table, usage

    commands = build_table(state.plugins().registry)[0].sorted()
    if as_json:
        echo_json([c.as_dict() for c in commands])
        return
    if not commands:
        click.echo("No loaded plugin declares commands.")
        return
    rows = [
        {
            "command": usage(c),
            "action": c.action,
            "capability": c.capability,
            "who": "admins" if c.admin_default else "everyone",
        }
        for c in commands
    ]
    table(rows, ["command", "action", "capability", "who"])


COMMANDS = [commands_group]
