"""`/llm policy channel|role|show`: per-place and per-role model policies of this server.

A place is a channel, category, forum or thread (default: where the command is run);
what it does not set, it inherits from its parent (thread, then its channel or forum,
then that one's category, then the server's default). `channel` and `role` need
``llm.provider.select``; `show` any ``llm.*`` capability. Replies are ephemeral.
"""

from __future__ import annotations

from typing import Any, Literal

import discord
from discord import app_commands

from gigi_core.llm import Place
from gigi_discord.commands.common import context
from gigi_discord.errors import Refusal, tell
from gigi_discord.places import places_of

SELECT = "llm.provider.select"
READ = ("llm.provider.write", SELECT, "llm.provider.test", "llm.usage.read")
PLACE_NEEDS: dict[str, tuple[str, ...]] = {
    "llm policy channel": (SELECT,),
    "llm policy role": (SELECT,),
    "llm policy show": READ,
}
PurposeName = Literal[
    "chat",
    "reasoning",
    "embedding",
    "routing",
    "classify",
    "extract",
    "summarise",
    "query_analyse",
    "respond",
    "complex",
]
AnswerMode = Literal["mention", "replies", "every"]
Clearable = Literal["model", "prompt", "answer", "all"]
Where = discord.abc.GuildChannel | discord.Thread


def _chain(interaction: discord.Interaction[Any], where: Any) -> tuple[Place, ...]:
    """The chosen place (or the one the command was run in) and its parents."""
    bot: Any = interaction.client
    channel = interaction.channel if where is None else bot.get_channel(where.id) or where
    chain = places_of(channel, bot)
    if not chain:
        raise Refusal("Run this in a channel of the server, or name one with `where`.")
    return chain


def _source(sourced: Any) -> str:
    if sourced.source is None:
        return "built-in default"
    if sourced.source.kind == "guild":
        return "server default"
    return f"{sourced.source.kind} <#{sourced.source.id}>"


def show_lines(view: Any, here: str) -> list[str]:
    """Each effective value with where it came from; roles with their models and budgets."""
    e = view.effective
    lines = [f"Policy at {here}:"]
    lines.append(f"**Answers**: {e.answer.value} — from {_source(e.answer)}")
    if e.prompt.value:
        lines.append(
            f"**Instructions**: {len(e.prompt.value)} characters — from {_source(e.prompt)}"
        )
    else:
        lines.append("**Instructions**: none — built-in default")
    for purpose, chosen in e.models.items():
        lines.append(f"**{purpose}**: {chosen.value} — from {_source(chosen)}")
    if not e.models:
        lines.append("**Models**: the server's profiles (`/llm profile list`) — server default")
    for role in view.roles:
        lines.append(f"<@&{role.role_id}> may use: {', '.join(role.models)}")
    for s in view.role_budgets:
        b = s.budget
        lines.append(
            f"<@&{b.scope_id}> budget ({b.window}): {s.spent:,} of {b.limit:,} tokens spent"
        )
    return lines


def add_place_commands(root: app_commands.Group) -> None:
    """Add the leaves to `/llm policy` (made here when no other module made it)."""
    group = root.get_command("policy")
    if not isinstance(group, app_commands.Group):
        group = app_commands.Group(name="policy", description="Who may use which model, where.")
        root.add_command(group)

    @group.command(name="channel", description="A channel's model, instructions, answer mode.")
    @app_commands.describe(
        where="A channel, category, forum or thread (default: this one)",
        purpose="The purpose whose model changes here",
        profile="Serve the purpose with this purpose's server profile",
        model="Serve the purpose with this model id on the same server key",
        prompt="Extra instructions for Gigi here (tone, topic; they grant nothing)",
        answer="mention (default), replies (also replies to Gigi), every (ambient channels)",
        clear="Inherit this again from the parent",
    )
    async def channel(
        interaction: discord.Interaction[Any],
        where: Where | None = None,
        purpose: PurposeName | None = None,
        profile: PurposeName | None = None,
        model: app_commands.Range[str, 1, 200] | None = None,
        prompt: app_commands.Range[str, 1, 4000] | None = None,
        answer: AnswerMode | None = None,
        clear: Clearable | None = None,
    ) -> None:
        ctx = await context(interaction)
        place = _chain(interaction, where)[0]
        policy = await ctx.kernel.llm.places.set_place(
            ctx.guild_id,
            place,
            purpose=purpose,
            profile=profile,
            model=model,
            prompt=prompt,
            answer=answer,
            clear=clear,
            by=ctx.actor.id,
        )
        models = ", ".join(f"{k} → {v}" for k, v in policy.models.items()) or "inherited"
        said = f"{len(policy.prompt)} characters" if policy.prompt else "inherited"
        await tell(
            interaction,
            f"<#{place.id}>: models {models}; instructions {said}; "
            f"answers {policy.answer or 'inherited'}.",
        )

    @group.command(name="role", description="Which models a role's members may use.")
    @app_commands.describe(
        role="The role",
        allow="Model ids or profile purposes, comma-separated",
        clear="Remove the role's limit",
    )
    async def role(
        interaction: discord.Interaction[Any],
        role: discord.Role,
        allow: app_commands.Range[str, 1, 1000] | None = None,
        clear: bool = False,
    ) -> None:
        ctx = await context(interaction)
        if clear == (allow is not None):
            raise Refusal("Give either `allow` (model ids, comma-separated) or `clear:True`.")
        models = None if clear else [m.strip() for m in (allow or "").split(",")]
        policy = await ctx.kernel.llm.places.set_role(
            ctx.guild_id, str(role.id), models, by=ctx.actor.id
        )
        if policy is None:
            await tell(interaction, f"<@&{role.id}> has no model limit now.")
        else:
            await tell(interaction, f"<@&{role.id}> may use: {', '.join(policy.models)}.")

    @group.command(name="show", description="What applies here, and where each value comes from.")
    @app_commands.describe(where="A channel, category, forum or thread (default: this one)")
    async def show(interaction: discord.Interaction[Any], where: Where | None = None) -> None:
        ctx = await context(interaction)
        chain = _chain(interaction, where)
        view = await ctx.kernel.llm.places.show(ctx.guild_id, chain)
        await tell(interaction, "\n".join(show_lines(view, f"<#{chain[0].id}>")))
