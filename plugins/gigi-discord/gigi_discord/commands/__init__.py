"""Slash commands, few roots to save command slots: /ask, /agent, and the admin roots /gigi and /llm.

Discord nests only two levels under a root, so the admin commands live under two roots
(`/gigi plugins|grants ...` and `/llm provider|credential|profile|usage ...`), each a
top-level command with ``default_permissions(manage_guild)`` *and* a runtime check.
"""

from __future__ import annotations

from discord import app_commands


def install(tree: app_commands.CommandTree) -> None:
    from gigi_discord.commands.admin import gigi_root
    from gigi_discord.commands.agent import agent_root
    from gigi_discord.commands.ask import ask
    from gigi_discord.commands.llm import llm_root

    tree.add_command(ask)
    tree.add_command(agent_root())
    tree.add_command(gigi_root())
    tree.add_command(llm_root())
