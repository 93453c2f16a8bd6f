"""``gigi channel pause|resume|secure|status``: what plugins may observe in a channel."""

from __future__ import annotations

from typing import Any

import click

from gigi_core.cli.common import echo_json, with_kernel


@click.group("channel")
def channel_group() -> None:
    """Pause, resume or secure what Gigi's plugins observe in one channel."""


def _state_command(verb: str, state: str, doc: str) -> click.Command:
    @channel_group.command(verb, help=doc)
    @click.option("--guild", required=True, help="Guild (server) id.")
    @click.option("--channel", required=True, help="Channel id.")
    @click.option("--by", help="Who made the change (for the audit log).")
    @with_kernel
    async def command(kernel: Any, guild: str, channel: str, by: str | None) -> None:
        from gigi_core.default_plugins.native_commands import STATE_SENTENCES

        change = await kernel.set_channel_state(guild, channel, state, by=by)
        same = " (no change)" if change.before == change.after else ""
        click.echo(f"Channel {channel} in guild {guild}: {change.after}{same}.")
        click.echo(
            STATE_SENTENCES[state].format(channel=channel).replace("<#", "").replace(">", "")
        )

    return command


_state_command("pause", "paused", "Stop plugins seeing messages there; mentions still work.")
_state_command("resume", "active", "Let enabled plugins see messages there again.")
_state_command("secure", "secure", "Like pause, and plugins drop what they hold in memory.")


@channel_group.command("status")
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--channel", help="Channel id (default: every channel that is not active).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def status(kernel: Any, guild: str, channel: str | None, as_json: bool) -> None:
    """A channel's state, or every paused and secure channel of the guild."""
    if as_json:
        if channel is not None:
            states = {channel: await kernel.channels.get(guild, channel)}
        else:
            states = await kernel.channels.states(guild)
        echo_json(
            {
                "guild": guild,
                "channels": [{"channel": c, "state": s} for c, s in sorted(states.items())],
            }
        )
        return
    if channel is not None:
        click.echo(
            f"Channel {channel} in guild {guild}: {await kernel.channels.get(guild, channel)}."
        )
        return
    states = await kernel.channels.states(guild)
    if not states:
        click.echo(f"Every channel of guild {guild} is active.")
    for name, state in sorted(states.items()):
        click.echo(f"  {name}: {state}")


COMMANDS = [channel_group]
