"""``gigi tools``: list actions and call one through the deterministic path."""

from __future__ import annotations

import sys
from typing import Any

import click

from gigi_core.cli.common import (
    CliState,
    UsageFailure,
    complete_action_names,
    echo_json,
    parse_json_option,
    pass_state,
    run,
    table,
)
from gigi_core.errors import PolicyDenied


@click.group("tools")
def tools_group() -> None:
    """List and call plugin actions."""


@tools_group.command("list")
@click.option("--guild", help="Only actions of plugins enabled in this guild.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_state
def list_tools(state: CliState, guild: str | None, as_json: bool) -> None:
    """Every declared action with its safety class and capability.

    MODEL says who may call it: ``yes`` when the model may propose it (and the policy then
    decides), ``direct-only`` when the manifest keeps it off the model (``offer_to_model:
    false``): only a command or `gigi tools call` runs it."""

    async def enabled() -> set[str] | None:
        if guild is None:
            return None
        kernel = await state.open_kernel()
        try:
            return set(await kernel.plugin_state.enabled_plugins(guild))
        finally:
            await kernel.close()

    only = run(enabled())
    rows = [
        {
            "name": a.name,
            "plugin": a.plugin,
            "model": a.offer_to_model,
            "safety": a.safety.value,
            "capability": a.capability,
            "default": state.plugins().registry.capability_default(a.capability),
            "confirm": a.confirm.value,
            "needs_confirmation": a.needs_confirmation,
            "description": a.description,
            "args": a.args,
        }
        for a in sorted(state.plugins().registry.actions.values(), key=lambda a: a.name)
        if only is None or a.plugin in only
    ]
    if as_json:
        echo_json(rows)
    else:
        shown = [{**r, "model": "yes" if r["model"] else "direct-only"} for r in rows]
        columns = ["name", "model", "safety", "capability", "default", "confirm", "description"]
        table(shown, columns)


@tools_group.command("call")
@click.argument("action", shell_complete=complete_action_names)
@click.option("--guild", required=True, help="Guild (server) id.")
@click.option("--user", required=True, help="Acting user id.")
@click.option("--role", "roles", multiple=True, help="A role the user holds (repeatable).")
@click.option("--admin", is_flag=True, help="The user is a guild admin.")
@click.option("--channel", help="Channel id.")
@click.option(
    "--args", "args_json", default="{}", show_default=True, help="Arguments as a JSON object."
)
@pass_state
def call(
    state: CliState,
    action: str,
    guild: str,
    user: str,
    roles: tuple[str, ...],
    admin: bool,
    channel: str | None,
    args_json: str,
) -> None:
    """Validate, check policy, execute and audit ACTION; print its result as JSON.

    Exit codes: 0 done, 2 invalid arguments or unknown action, 3 denied,
    4 confirmation required (prints the run id; `gigi agent confirm RUN` runs it),
    5 the tool failed.
    """
    from gigi_core.agent.contracts import Request
    from gigi_core.policy.actor import Actor

    args = _parse_args(args_json)

    async def body() -> Any:
        kernel = await state.open_kernel()
        try:
            spec = kernel.registry.actions.get(action)
            on_by_default = spec is not None and spec.plugin in kernel.plugin_state.on_by_default
            if spec and not on_by_default and not await kernel.plugin_state.known_guild(guild):
                raise PolicyDenied(
                    action,
                    f"guild {guild} is unknown: no plugin was ever enabled there "
                    f"(gigi plugins enable PLUGIN --guild {guild})",
                )
            actor = Actor(id=user, roles=frozenset(roles), is_admin=admin)
            request = Request(
                actor=actor, guild_id=guild, channel_id=channel, kind="direct", text=""
            )
            return await kernel.agent.direct(request, action, args)
        finally:
            await kernel.close()

    reply = run(body())
    if reply.status == "awaiting_confirmation":
        [prompt] = reply.components
        shown = "".join(f"\n  {line}" for line in prompt.arguments.splitlines())
        click.echo(
            f"{prompt.summary}{shown}\nRun {reply.run_id} is waiting: confirm with "
            f"`gigi agent confirm {reply.run_id}` or reject with `gigi agent reject {reply.run_id}`.",
            err=True,
        )
        click.echo(reply.run_id)
        sys.exit(4)
    echo_json(reply.citations[0].result if reply.citations else None)


def _parse_args(text: str) -> Any:
    """``--args`` as JSON, held here to the depth and size limits of every tool call
    (``GIGI_TOOL_ARGS_MAX_DEPTH``, ``GIGI_TOOL_ARGS_MAX_CHARS``): a usage error (exit 2).

    Checked before the call is journalled: copying a value 600 levels deep for the run's
    state would exhaust Python's recursion before the kernel's own check is reached.
    """
    from gigi_core.tools import bounds

    limits = bounds.limits()
    try:
        args = parse_json_option(text, "--args")
    except RecursionError:
        raise UsageFailure(
            f"--args is nested too deeply to read (deeper than {limits.max_depth} levels, "
            "GIGI_TOOL_ARGS_MAX_DEPTH); send a flatter JSON object"
        ) from None
    problem = bounds.problem(args, limits)
    if problem is not None:
        raise UsageFailure(f"--args: {problem}")
    return args


COMMANDS = [tools_group]
