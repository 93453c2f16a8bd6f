"""Running a manifest-declared slash command: the deterministic direct path, no model.

Discord's default permissions only hide a command, and server owners can show it to
anyone, so nothing here trusts them: the runtime validates the arguments, asks the policy
(plugin enabled here, capability held, channel visible) and audits, exactly as for
``/agent call``. This module turns what the runtime says into sentences and buttons.
"""

from __future__ import annotations

from typing import Any

import discord

from gigi_core import GigiError, PolicyDenied
from gigi_core.surfaces import CommandSpec, Request
from gigi_discord.commands.common import context
from gigi_discord.errors import Refusal, defer, sentence, tell
from gigi_discord.identity import channel_checker, channel_lister
from gigi_discord.results import DM_FILES, send_result


def disabled_text(spec: CommandSpec) -> str:
    return (
        f"The **{spec.plugin}** plugin is not enabled in this server, so `/{spec.text}` does "
        f"nothing here. A server admin can turn it on with `/gigi plugins enable "
        f"plugin:{spec.plugin}`."
    )


async def denied_text(kernel: Any, guild_id: str, spec: CommandSpec, exc: PolicyDenied) -> str:
    """Why the policy said no, in Discord's words (the plugin being off comes first)."""
    if spec.plugin not in await kernel.plugin_state.enabled_plugins(guild_id):
        return disabled_text(spec)
    reason = sentence(exc.reason)
    return f"You cannot use `/{spec.text}` here: {reason[0].lower()}{reason[1:]}"


async def run_command(
    interaction: discord.Interaction[Any],
    spec: CommandSpec,
    args: dict[str, Any],
    *,
    private: bool = False,
) -> None:
    """Defer (privately for admin commands, personal data and ``private``: a plugin's
    button), run, show the result.

    A write or destructive action answers with Confirm / Reject buttons; the result of
    the confirmed call is rendered by the same code (``gigi_discord.results``).
    """
    if interaction.guild is None:
        raise Refusal("This command only works in a server.")
    ctx = await context(interaction)
    if spec.plugin not in await ctx.kernel.plugin_state.enabled_plugins(ctx.guild_id):
        # Answered before deferring, so the refusal stays private even for public commands
        # (the direct path would refuse too, after a public "thinking…" message).
        raise Refusal(disabled_text(spec))
    private = private or spec.ephemeral or spec.action in DM_FILES
    request = Request(
        actor=ctx.actor,
        guild_id=ctx.guild_id,
        channel_id=str(interaction.channel_id) if interaction.channel_id else None,
        kind="slash",
        text="",
        channel_visible=channel_checker(interaction.guild, interaction.user),
        visible_channels=channel_lister(
            interaction.guild, interaction.user, shown_in=None if private else interaction.channel
        ),
    )
    await defer(interaction, ephemeral=private)
    try:
        reply = await ctx.bot.runtime.direct(request, spec.action, args)
    except PolicyDenied as exc:
        await tell(interaction, await denied_text(ctx.kernel, ctx.guild_id, spec, exc))
        return
    except GigiError as exc:
        await tell(interaction, sentence(str(exc)))
        return
    await send_result(interaction, reply, bot=ctx.bot, ephemeral=private, admin=ctx.actor.is_admin)
