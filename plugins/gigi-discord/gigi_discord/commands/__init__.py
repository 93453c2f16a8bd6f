"""Slash commands, few roots to save command slots: /ask, /agent, /quota, the admin roots
/gigi and /llm, and one root per plugin that declares commands in its manifest.

Discord nests only two levels under a root, so the admin commands live under two roots
(`/gigi plugins|grants ...` and `/llm provider|credential|profile|usage ...`), each a
top-level command with ``default_permissions(manage_guild)`` *and* a runtime check. The
kernel's own manifest commands (`/gigi channel ...`, `/gigi privacy ...`) join `/gigi`.
"""

from __future__ import annotations

from typing import Any

from discord import app_commands


def install(tree: app_commands.CommandTree, kernel: Any = None) -> None:
    from gigi_discord.commands.admin import gigi_root
    from gigi_discord.commands.agent import agent_root
    from gigi_discord.commands.ask import ask
    from gigi_discord.commands.invoke import run_command
    from gigi_discord.commands.llm import llm_root
    from gigi_discord.commands.llm_budget import quota
    from gigi_discord.commands.manifest import install_manifest_commands

    gigi = gigi_root()
    tree.add_command(ask)
    tree.add_command(agent_root())
    tree.add_command(gigi)
    tree.add_command(llm_root())
    tree.add_command(quota)
    table = getattr(kernel, "commands", None)
    if table is not None:
        install_manifest_commands(tree, table, kernel.registry.manifests, run_command, gigi)
