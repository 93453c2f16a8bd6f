"""`/gigi plugins review`: what plugin upgrades hold back in this server, and an Accept button.

An upgrade that widens what a plugin may do keeps those actions off per server until an
admin accepts that plugin version here; the button carries plugin and version in its
``custom_id`` (a ``DynamicItem``), so it still works after a restart.
"""

from __future__ import annotations

from typing import Any

import discord
from discord import app_commands

from gigi_discord.commands.common import ADMIN_ONLY, context, listing
from gigi_discord.errors import tell
from gigi_discord.identity import is_guild_admin

TEMPLATE = r"gigi:r:(?P<plugin>[a-z][a-z0-9_]{0,63}):(?P<version>[A-Za-z0-9_.+!-]{1,40})"


def held_lines(pending: list[Any]) -> list[str]:
    """Each held-back action and what widened it, per plugin version."""
    lines = []
    for item in pending:
        lines.append(f"**{item.plugin}** {item.version}:")
        for action, change in item.actions:
            shown = f"every action of {item.plugin}" if action == "*" else f"`{action}`"
            lines.append(f"• {shown}: {change}")
    return lines


class AcceptButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=TEMPLATE):
    """``gigi:r:<plugin>:<version>``: a server admin turns that version's held actions on."""

    def __init__(self, plugin: str, version: str) -> None:
        super().__init__(
            discord.ui.Button(
                label=f"Accept {plugin} {version}"[:80],
                style=discord.ButtonStyle.success,
                custom_id=f"gigi:r:{plugin}:{version}",
            )
        )
        self.plugin = plugin
        self.version = version

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: Any, /
    ) -> AcceptButton:
        return cls(match["plugin"], match["version"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if interaction.guild is None:
            await tell(interaction, "Accept this in the server it names.")
            return
        if not is_guild_admin(interaction.user, interaction.permissions):
            await tell(interaction, ADMIN_ONLY)
            return
        ctx = await context(interaction)
        pending = {(p.plugin, p.version) for p in await ctx.kernel.reviews.pending(ctx.guild_id)}
        if (self.plugin, self.version) not in pending:
            await tell(interaction, f"Nothing of **{self.plugin}** {self.version} is held here.")
            return
        await ctx.kernel.reviews.accept(ctx.guild_id, self.plugin, self.version, by=ctx.actor.id)
        await tell(
            interaction,
            f"Accepted **{self.plugin}** {self.version} in this server: its new and widened "
            "actions are on (grants and confirmations still apply).",
        )


def review_view(pending: list[Any]) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for item in pending[:25]:  # Discord's limit of components on one message
        view.add_item(AcceptButton(item.plugin, item.version))
    return view


def add_review(group: app_commands.Group) -> None:
    """Adds ``review`` to the admin ``/gigi plugins`` group."""

    @group.command(name="review", description="What plugin upgrades hold back here; accept it.")
    async def review(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        pending = await ctx.kernel.reviews.pending(ctx.guild_id)
        if not pending:
            await tell(interaction, "Nothing is held back in this server.")
            return
        head = "Upgraded plugins can do more; these stay off here until you accept them:\n"
        text = head + listing(held_lines(pending), "", limit=1700)
        await interaction.response.send_message(
            text,
            ephemeral=True,
            view=review_view(pending),
            allowed_mentions=discord.AllowedMentions.none(),
        )
