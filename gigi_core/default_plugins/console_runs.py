"""The console's commands on runs: ``/call`` one action directly, ``/confirm``, ``/reject``
and ``/cancel`` a run, and ``/trace`` its steps.

They work on the surface-independent runtime (``direct``, ``confirm``, ``reject``,
``cancel``, ``trace``), so the console decides nothing the other surfaces do not.
"""

from __future__ import annotations

import json
from typing import Any

# The console surface (``gigi_core.default_plugins.console.ConsoleSurface``), typed loosely,
# as in ``console_review``: this module is imported by it, never the other way round.
ConsoleSurface = Any


async def cmd_call(console: ConsoleSurface, rest: str) -> None:
    """``/call ACTION JSON``: one action on the deterministic path, no model."""
    action, _, raw = rest.partition(" ")
    if not action:
        console.say('Usage: /call ACTION JSON, for example /call dice.roll {"sides": 6}')
        return
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        console.say(
            f"Error: the arguments are not valid JSON ({exc.msg} at column {exc.colno}); "
            f'write them as an object, e.g. /call {action} {{"key": "value"}}'
        )
        return
    if not isinstance(args, dict):
        console.say(f"Error: the arguments must be a JSON object, not {type(args).__name__}.")
        return
    console.show(await console.runtime.direct(console.request("console", ""), action, args))


async def cmd_confirm(console: ConsoleSurface, rest: str) -> None:
    """``/confirm [RUN]``: approve the waiting call (the last one waiting by default)."""
    run_id = _run_arg(console, rest, "confirm")
    if run_id:
        console.show(
            await console.runtime.confirm(run_id, console.actor, guild_id=console.guild_id)
        )


async def cmd_reject(console: ConsoleSurface, rest: str) -> None:
    """``/reject [RUN]``: refuse the waiting call; it never runs."""
    run_id = _run_arg(console, rest, "reject")
    if run_id:
        console.show(await console.runtime.reject(run_id, console.actor, guild_id=console.guild_id))


async def cmd_cancel(console: ConsoleSurface, rest: str) -> None:
    """``/cancel RUN``: stop a run, saying whether there was anything to stop."""
    if not rest:
        console.say("Usage: /cancel RUN")
        return
    if await console.runtime.cancel(rest, console.actor, guild_id=console.guild_id):
        console.say(f"Cancelled run {rest}.")
    else:
        console.say(f"Run {rest} was not active; nothing changed.")
    if console.waiting == rest:
        console.waiting = None


async def cmd_trace(console: ConsoleSurface, rest: str) -> None:
    """``/trace [RUN]``: a run's steps and decisions (the last run here by default)."""
    from gigi_core.surfaces import trace_lines

    runs = console.runtime.runs
    run_id = rest or (await runs.last(guild_id=console.guild_id)).id
    for line in trace_lines(await console.runtime.trace(run_id)):
        console.say(line)


def _run_arg(console: ConsoleSurface, rest: str, verb: str) -> str | None:
    """The run named, else the one waiting; None (and a hint) when there is neither."""
    run_id = rest or console.waiting
    if not run_id:
        console.say(f"Nothing is waiting for a confirmation; use /{verb} RUN.")
    return run_id
