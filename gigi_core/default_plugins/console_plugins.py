"""The console's commands on plugins: ``/plugins``, ``/enable``, ``/disable``, the plugin
commands on offer (``/commands``) and event delivery to observers (``/status``).

The operator is the console guild's admin, so enabling needs no grant; what cannot be
enabled (a module name, a provider, a surface) is refused with the names to use instead.
"""

from __future__ import annotations

from typing import Any

# The console surface (``gigi_core.default_plugins.console.ConsoleSurface``), typed loosely,
# as in ``console_review``: this module is imported by it, never the other way round.
ConsoleSurface = Any


async def cmd_status(console: ConsoleSurface, rest: str) -> None:
    """This process's event delivery per observing plugin."""
    status = console.kernel.events.status()
    if not status:
        console.say("No plugin observes events.")
    for name, c in status.items():
        console.say(
            f"  {name}: delivered {c['delivered']}, dropped {c['dropped']}, "
            f"failed {c['failed']}, timed out {c['timed_out']}, queued {c['queued']}"
        )


async def cmd_commands(console: ConsoleSurface, rest: str) -> None:
    """Every plugin command with its usage, so the operator can type it."""
    from gigi_core.commands import usage

    commands = console.kernel.commands.sorted()
    if not commands:
        console.say("No plugin offers commands.")
    for spec in commands:
        console.say(f"  {usage(spec)}  — {spec.description} ({spec.capability})")


async def cmd_plugins(console: ConsoleSurface, rest: str) -> None:
    """Installed plugins, whether each is on here, and what cannot be turned on and why."""
    registry = console.kernel.registry
    enabled = set(await console.kernel.plugin_state.enabled_plugins(console.guild_id))
    console.say(f"Plugins in guild {console.guild_id}:")
    for name, manifest in sorted(registry.manifests.items()):
        if not manifest.plugin.per_server:
            console.say(f"  [n/a] {name}: nothing to enable here ({manifest.plugin.description})")
            continue
        owner = registry.owner_of(name)
        native = " (native)" if owner is not None and owner.source == "default" else ""
        mark = "on " if name in enabled else "off"
        actions = ", ".join(a.name for a in manifest.actions) or "no actions"
        console.say(
            f"  [{mark}] {name} {manifest.plugin.version}{native}: "
            f"{manifest.plugin.description} ({actions})"
        )
    for record in registry.records.values():
        if record.status == "failed":
            console.say(f"  [failed] {record.name}: {record.error}")
        elif not record.manifests:  # a provider or a surface: nothing to turn on here
            console.say(f"  [n/a] {record.name}: nothing to enable ({_provides(record)})")
    if not registry.manifests:
        console.say("  none installed")
    console.say("/enable NAME turns one on here; /disable NAME turns it off.")


async def cmd_enable(console: ConsoleSurface, rest: str) -> None:
    """``/enable NAME [--allow-external]`` in the console guild."""
    name, _, flags = rest.partition(" ")
    if not name:
        console.say("Usage: /enable NAME [--allow-external]")
        return
    external = True if "--allow-external" in flags.split() else None
    if _cannot_enable(console, name):
        return
    await console.kernel.enable_plugin(
        console.guild_id, name, allow_external=external, by=console.actor.id
    )
    extra = " with external actions allowed" if external else ""
    console.say(f"Enabled {name} in guild {console.guild_id}{extra}.")


async def cmd_disable(console: ConsoleSurface, rest: str) -> None:
    """``/disable NAME``: off in the console guild, its config kept."""
    if not rest:
        console.say("Usage: /disable NAME")
        return
    if _cannot_enable(console, rest):
        return
    if await console.kernel.disable_plugin(console.guild_id, rest, by=console.actor.id):
        console.say(f"Disabled {rest} in guild {console.guild_id} (its config is kept).")
    else:
        console.say(f"{rest} was not enabled in guild {console.guild_id}; nothing changed.")


def _cannot_enable(console: ConsoleSurface, name: str) -> bool:
    """Say why NAME is not a plugin one enables (a module name, a provider, a surface)."""
    registry = console.kernel.registry
    record = registry.records.get(name)
    if name in registry.manifests or record is None or record.status != "ok":
        return False  # enabling it works, or the kernel's error says what is loaded
    declared = sorted(m.plugin.name for m in record.manifests)
    if declared:
        console.say(
            f"Error: {name} is the module of the plugins {', '.join(declared)}; "
            "enable them by those names."
        )
    else:
        console.say(
            f"Error: {name} has no actions, so there is nothing to enable in a guild: "
            f"it provides {_provides(record)}."
        )
    return True


def _provides(record: Any) -> str:
    """What a plugin without manifests contributes, in words."""
    c = record.contributions
    parts = []
    if c.providers:
        parts.append(f"the LLM providers {', '.join(sorted(c.providers))}")
    if c.surfaces:
        parts.append(f"the surface {', '.join(sorted(c.surfaces))}")
    if c.retrievers:
        parts.append(f"the retrievers {', '.join(sorted(c.retrievers))}")
    return " and ".join(parts) or "no manifest"
