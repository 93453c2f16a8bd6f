"""`/llm models` (what one of this server's keys can call) and `/llm failover set|show|clear`
(which of this server's own keys a failing call moves on to).

Listing needs any of ``llm.provider.write|select|test``; the failover list is a model
choice, so it needs ``llm.provider.select`` (``NEEDS`` in ``commands/llm.py``). Both act
for the owner ``guild:<this server>`` only: an entry can never be another server's key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import discord
from discord import app_commands

from gigi_discord.commands.common import choices, context, listing
from gigi_discord.errors import tell

Purpose = Literal[
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
NEEDS: dict[str, tuple[str, ...]] = {
    "llm models": ("llm.provider.write", "llm.provider.select", "llm.provider.test"),
    "llm failover set": ("llm.provider.select",),
    "llm failover show": ("llm.provider.write", "llm.provider.select", "llm.provider.test"),
    "llm failover clear": ("llm.provider.select",),
}
#: Where a listing's lines say to look for more (Discord replies stop near 2,000 characters).
SEE_MORE = "the full list: `gigi llm models --owner guild:{gid} --credential {label}`"


def _owner(guild_id: str) -> str:
    return f"guild:{guild_id}"


async def _keys(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    """This server's key labels and their providers' names."""
    ctx = await context(interaction)
    creds = await ctx.kernel.llm.list_credentials(_owner(ctx.guild_id))
    return choices(sorted({c.label for c in creds} | {c.provider for c in creds}), current)


def _model_line(model: Any) -> str:
    facts = [f for f in (model.display_name,) if f and f != model.id]
    if model.context_window:
        facts.append(f"{model.context_window:,} tokens")
    return f"`{model.id}`" + (f" ({', '.join(facts)})" if facts else "")


def models_command() -> app_commands.Command[Any, Any, Any]:
    @app_commands.command(
        name="models", description="The models one of this server's keys can call."
    )
    @app_commands.describe(
        provider="A key's label, or a provider when the server has one key for it",
        refresh="Ask the provider now instead of the list kept for an hour",
    )
    @app_commands.autocomplete(provider=_keys)
    async def models(
        interaction: discord.Interaction[Any],
        provider: app_commands.Range[str, 1, 64],
        refresh: bool = False,
    ) -> None:
        ctx = await context(interaction)
        found = await ctx.kernel.llm.list_models(_owner(ctx.guild_id), provider, refresh=refresh)
        when = datetime.fromtimestamp(found.fetched_at, UTC)
        head = (
            f"**{found.label}** ({found.provider}) can call {len(found.models)} models "
            f"(as of <t:{int(when.timestamp())}:R>):"
        )
        lines = [_model_line(m) for m in found.models]
        body = listing(lines, "The provider lists no models for this key.", limit=1700)
        more = SEE_MORE.format(gid=ctx.guild_id, label=found.label)
        cut = len(body.splitlines()) <= len(lines) and len(lines) > 0 and body.endswith(" more.")
        await tell(interaction, f"{head}\n{body}" + (f"\n{more}" if cut else ""))

    return models


def failover_group() -> app_commands.Group:
    group = app_commands.Group(
        name="failover", description="Which of this server's keys a failing call moves on to."
    )

    @group.command(name="set", description="Keys (and models) tried in order when a call fails.")
    @app_commands.describe(
        purpose="What the models are used for",
        order="This server's key labels, in order; label:model picks the model (e.g. spare:gpt-4o-mini)",
        on="Errors that move on (default rate_limited,overloaded,server,timeout)",
    )
    async def set_(
        interaction: discord.Interaction[Any],
        purpose: Purpose,
        order: app_commands.Range[str, 1, 500],
        on: app_commands.Range[str, 1, 200] | None = None,
    ) -> None:
        ctx = await context(interaction)
        plan = await ctx.kernel.llm.set_failover(
            _owner(ctx.guild_id), purpose, order, on, by=ctx.actor.id
        )
        await tell(interaction, f"Failover for {plan.describe()}.")

    @group.command(name="show", description="This server's failover lists.")
    async def show(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        plans = await ctx.kernel.llm.failover(_owner(ctx.guild_id))
        lines = [f"**{p.purpose}**: {p.order_text()}" for p in plans]
        await tell(interaction, listing(lines, "No failover lists: `/llm failover set`."))

    @group.command(name="clear", description="Remove a purpose's failover list.")
    @app_commands.describe(purpose="The purpose whose list goes")
    async def clear(interaction: discord.Interaction[Any], purpose: Purpose) -> None:
        ctx = await context(interaction)
        await ctx.kernel.llm.clear_failover(_owner(ctx.guild_id), purpose, by=ctx.actor.id)
        await tell(
            interaction, f"Removed the {purpose} failover list: failures are reported as they come."
        )

    return group
