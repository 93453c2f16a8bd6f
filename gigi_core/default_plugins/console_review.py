"""The console's ``/review``: what plugin upgrades hold back in this guild, and accepting it.

The same facts as ``gigi plugins review`` and Discord's ``/gigi plugins review``: actions an
upgrade added or widened stay off in a guild until its admin accepts that plugin version.
"""

from __future__ import annotations

from typing import Any

# The console surface (``gigi_core.default_plugins.console.ConsoleSurface``), typed loosely:
# a plugin module names no other module's internals, even for type checking.
ConsoleSurface = Any

USAGE = "Usage: /review (what upgrades hold back here), /review accept [PLUGIN]"


async def cmd_review(console: ConsoleSurface, rest: str) -> None:
    """List held-back actions here, or accept them (all, or one plugin's)."""
    words = rest.split()
    if (words and words[0] != "accept") or len(words) > 2:
        console.say(USAGE)
        return
    pending = await console.kernel.reviews.pending(console.guild_id)
    if words:
        if len(words) == 2:
            pending = [p for p in pending if p.plugin == words[1]]
        if not console.actor.is_admin:
            console.say("Only this guild's admin can accept a plugin upgrade.")
            return
        if not pending:
            console.say("Nothing is held back here; nothing to accept.")
            return
        for item in pending:
            await console.kernel.reviews.accept(
                console.guild_id, item.plugin, item.version, by=console.actor.id
            )
        names = ", ".join(f"{p.plugin} {p.version}" for p in pending)
        console.say(f"Accepted here: {names}. Their new and widened actions are on.")
        return
    if not pending:
        console.say("Nothing is held back here.")
        return
    from gigi_core.default_plugins.console_render import printable  # manifest text

    for item in pending:
        console.say(f"{item.plugin} {item.version}:")
        for action, change in item.actions:
            shown = f"every action of {item.plugin}" if action == "*" else printable(action)
            console.say(f"  {shown}: {printable(change)}")
    console.say("Accept with: /review accept [PLUGIN]")
