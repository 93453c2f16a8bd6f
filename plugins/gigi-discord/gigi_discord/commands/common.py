"""What every command needs: the bot, who is acting, in which guild, and short listings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from gigi_core.surfaces import Actor
from gigi_discord.errors import Refusal
from gigi_discord.identity import guild_key, is_guild_admin, resolve_actor

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot

ADMIN_ONLY = "Only server admins (Manage Server) can use this command."


@dataclass(frozen=True)
class Ctx:
    bot: GigiBot
    kernel: Any
    actor: Actor
    guild_id: str


async def context(interaction: discord.Interaction[Any]) -> Ctx:
    bot: GigiBot = interaction.client  # type: ignore[assignment]
    perms = interaction.permissions if interaction.guild is not None else None
    actor = await resolve_actor(bot.kernel, interaction.user, perms)
    return Ctx(bot, bot.kernel, actor, guild_key(interaction.guild, interaction.user))


async def admin_check(interaction: discord.Interaction[Any]) -> bool:
    """Manage Server, checked when the command runs (Discord's own gate can be overridden)."""
    if interaction.guild is None:
        raise Refusal("This command only works in a server.")
    if not is_guild_admin(interaction.user, interaction.permissions):
        raise Refusal(ADMIN_ONLY)
    return True


async def require_capability(interaction: discord.Interaction[Any], *capabilities: str) -> Ctx:
    """The policy engine decides (admins hold every capability; a grant gives a member
    exactly the one it names); any one of ``capabilities`` is enough."""
    if interaction.guild is None:
        raise Refusal("This command only works in a server.")
    ctx = await context(interaction)
    reasons = []
    for capability in capabilities:
        decision = await ctx.kernel.policy.capability(ctx.actor, capability, ctx.guild_id)
        if decision.allowed:
            return ctx
        reasons.append(decision.reason)
    if len(capabilities) == 1:
        raise Refusal(f"Not allowed: {reasons[0]}.")
    names = ", ".join(capabilities[:-1]) + f" or {capabilities[-1]}"
    raise Refusal(
        f"Not allowed: this needs one of {names}; a server admin can grant it "
        "with `/gigi grants add`."
    )


class AdminGroup(app_commands.Group):
    """A root that Discord hides from non-admins *and* that checks again when invoked.

    Server owners can re-enable hidden commands for anyone in Integrations settings, and
    Discord ignores default permissions on subcommands, so the runtime check is the real
    one. discord.py only runs the *immediate* parent group's ``interaction_check`` (not the
    root's), so ``guard()`` puts the check on every leaf command instead.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            default_permissions=discord.Permissions(manage_guild=True),
            guild_only=True,
            **kwargs,
        )

    def guard(self) -> AdminGroup:
        """Every leaf and every autocomplete: discord.py runs no command checks for those."""
        for command in self.walk_commands():
            if isinstance(command, app_commands.Command):
                command.add_check(admin_check)
                for param in command._params.values():
                    complete = param.autocomplete
                    if complete is not None and admin_check not in getattr(
                        complete, "__discord_app_commands_checks__", []
                    ):
                        app_commands.check(admin_check)(complete)
        return self


def listing(lines: list[str], empty: str, limit: int = 1900) -> str:
    """Lines joined under Discord's limit, saying how many were left out."""
    if not lines:
        return empty
    out: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        if size + len(line) + 1 > limit:
            out.append(f"…and {len(lines) - i} more.")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def choices(values: list[str], current: str) -> list[app_commands.Choice[str]]:
    """Autocomplete: up to 25 matches, Discord's maximum."""
    cur = current.lower()
    return [app_commands.Choice(name=v[:100], value=v[:100]) for v in values if cur in v.lower()][
        :25
    ]
