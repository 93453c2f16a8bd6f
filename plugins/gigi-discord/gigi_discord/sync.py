"""Sync slash commands only when they changed: a hash of the rendered tree, kept on disk.

Discord allows 200 command creations per day per guild and rate-limits bulk overwrites, and
every ``tree.sync()`` at start-up is a request that changes nothing most of the time. The
hash covers exactly what would be sent (every root as discord.py renders it, the kernel's
command-table digest and the guilds synced instantly), per application id, in
``<GIGI_HOME>/discord-commands.sha256`` (``sha256sum``-style lines: ``<hash>  <app id>``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import discord

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

log = logging.getLogger(__name__)
FILENAME = "discord-commands.sha256"


def tree_hash(bot: GigiBot, guilds: list[int]) -> str:
    tree = bot.tree
    commands = sorted((c.to_dict(tree) for c in tree.get_commands()), key=lambda c: c["name"])
    table = getattr(bot.kernel, "commands", None)
    payload = {
        "commands": commands,
        "table": table.digest() if table is not None else None,
        "guilds": sorted(guilds),
    }
    data = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


class SyncRecord:
    """The last hash synced per application id; a missing or unreadable file means "sync"."""

    def __init__(self, home: Path | None) -> None:
        self.path = Path(home) / FILENAME if home is not None else None

    def read(self) -> dict[str, str]:
        if self.path is None:
            return {}
        try:
            lines = self.path.read_text().splitlines()
        except OSError:
            return {}
        stored: dict[str, str] = {}
        for line in lines:
            digest, _, app = line.strip().partition("  ")
            if digest and app:
                stored[app] = digest
        return stored

    def write(self, application_id: str, digest: str) -> None:
        if self.path is None:
            return
        stored = self.read()
        stored[application_id] = digest
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("".join(f"{d}  {a}\n" for a, d in sorted(stored.items())))
        except OSError as exc:  # next start syncs again; nothing worse
            log.warning("could not record the synced commands in %s: %s", self.path, exc)


async def sync_if_changed(bot: GigiBot, *, force: bool = False) -> bool:
    """Sync to the development guilds and globally unless the stored hash matches.

    Returns whether anything was sent. The hash is written only after every sync worked.
    """
    guilds = list(bot.settings.sync_guilds or [])
    digest = tree_hash(bot, guilds)
    app = str(bot.application_id or "unknown")
    home = getattr(getattr(bot.kernel, "settings", None), "home", None)
    record = SyncRecord(home)
    if not force and record.read().get(app) == digest:
        log.info("slash commands unchanged since the last sync; not syncing")
        return False
    tree: Any = bot.tree
    for guild_id in guilds:
        guild = discord.Object(id=guild_id)
        tree.copy_global_to(guild=guild)
        await tree.sync(guild=guild)
    await tree.sync()
    record.write(app, digest)
    log.info("synced %d slash commands", len(tree.get_commands()))
    return True
