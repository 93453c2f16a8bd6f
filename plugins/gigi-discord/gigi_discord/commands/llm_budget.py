"""`/llm budget set|show|reset|remove` for admins, `/quota` for every member.

A budget is named as on the CLI: no target for the whole server, or one of ``member``,
``channel``, ``role``, ``model``, ``plugin`` (a plugin's own allowance, e.g. ambient's
daily one), or ``each`` (every member, or every channel, on their own); and its ``window``. Set, reset and remove need ``llm.provider.write``, show needs
``llm.usage.read`` (``NEEDS`` in ``commands/llm.py``); `/quota` shows a member only their
own allowance. Replies are ephemeral.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import discord
from discord import app_commands

from gigi_discord.commands.common import context, listing
from gigi_discord.errors import Refusal, tell
from gigi_discord.places import places_of

Window = Literal["daily", "weekly", "monthly"]
Each = Literal["member", "channel"]


def _when(moment: datetime) -> str:
    """A reset time every reader sees in their own time zone, and in UTC."""
    return f"<t:{int(moment.timestamp())}:f> ({moment.strftime('%Y-%m-%d %H:%M')} UTC)"


def who(kind: str, scope_id: str, *, you: str | None = None) -> str:
    """A budget's scope in Discord's terms (mentions render as names and never ping)."""
    if kind == "guild":
        return "The server"
    if scope_id == "*":
        return f"Each {kind}"
    if kind == "member":
        return "You" if scope_id == you else f"<@{scope_id}>"
    if kind == "channel":
        return f"<#{scope_id}>"
    if kind == "role":
        return f"<@&{scope_id}>"
    if kind == "plugin":
        return f"Plugin `{scope_id}`"
    return f"Model `{scope_id}`"


def _scope(
    member: discord.Member | discord.User | None,
    channel: discord.abc.GuildChannel | None,
    role: discord.Role | None,
    model: str | None,
    each: str | None,
    plugin: str | None = None,
) -> tuple[str, str | None]:
    """(scope kind, scope id) from the options; at most one target may be given."""
    given = [
        (kind, value)
        for kind, value in (
            ("member", None if member is None else str(member.id)),
            ("channel", None if channel is None else str(channel.id)),
            ("role", None if role is None else str(role.id)),
            ("model", model),
            ("plugin", plugin),
            (each or "", "*" if each else None),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise Refusal(
            "Give at most one of `member`, `channel`, `role`, `model`, `plugin` or `each`."
        )
    return given[0] if given else ("guild", None)


def budget_group() -> app_commands.Group:
    group = app_commands.Group(name="budget", description="Model budgets (tokens) here.")

    @group.command(name="set", description="Create or change a budget; its spend is kept.")
    @app_commands.describe(
        limit="Tokens per window, or with unit money an amount (2.50) of the prices' currency",
        unit="tokens (default) or money (needs prices on the profiles)",
        window="How often it resets (default daily)",
        member="Only this member",
        channel="Only this channel",
        role="Shared by the members who hold this role",
        model="A provider (openai) or provider/model (openai/gpt-4o)",
        each="Every member, or every channel, with a budget of its own",
        plugin="A plugin's own allowance (ambient's daily one)",
        reset_hour="The UTC hour the window starts (default 0)",
        exempt_role="A role this budget skips (replaces the exempt roles)",
        exempt_admins="Whether server admins skip it (they do by default)",
    )
    async def set_(
        interaction: discord.Interaction[Any],
        limit: app_commands.Range[float, 0, 10**15],
        window: Window = "daily",
        member: discord.Member | None = None,
        channel: discord.abc.GuildChannel | None = None,
        role: discord.Role | None = None,
        model: app_commands.Range[str, 1, 200] | None = None,
        each: Each | None = None,
        reset_hour: app_commands.Range[int, 0, 23] | None = None,
        exempt_role: discord.Role | None = None,
        exempt_admins: bool | None = None,
        unit: Literal["tokens", "money"] = "tokens",
        plugin: app_commands.Range[str, 1, 64] | None = None,
    ) -> None:
        ctx = await context(interaction)
        kind, ident = _scope(member, channel, role, model, each, plugin)
        amount = str(int(limit)) if float(limit).is_integer() else str(limit)
        budget = await ctx.kernel.llm.set_budget(
            ctx.guild_id,
            kind,
            ident,
            limit=amount,  # read as whole tokens or an amount of money by the kernel
            unit=unit,
            window=window,
            reset_hour=reset_hour,
            exempt_roles=None if exempt_role is None else [str(exempt_role.id)],
            exempt_admins=exempt_admins,
            by=ctx.actor.id,
        )
        exempt = ", ".join(f"<@&{r}>" for r in budget.exempt_roles) or "no roles"
        admins = "admins exempt" if budget.exempt_admins else "admins held too"
        await tell(
            interaction,
            f"{who(budget.scope_kind, budget.scope_id)}: {budget.amount(budget.limit)}{budget.noun} "
            f"{budget.window}, resets at {budget.reset_hour:02d}:00 UTC; exempt: {exempt}; "
            f"{admins}.",
        )

    @group.command(name="show", description="Every budget here: spent, held, left, reset.")
    async def show(interaction: discord.Interaction[Any]) -> None:
        ctx = await context(interaction)
        lines = []
        for s in await ctx.kernel.llm.budget_status(ctx.guild_id):
            b = s.budget
            left = "each its own" if s.left is None else f"{b.amount(s.left)} left"
            exempt = ", ".join(f"<@&{r}>" for r in b.exempt_roles)
            exempt += (" and admins" if exempt else "admins") if b.exempt_admins else ""
            lines.append(
                f"**{who(b.scope_kind, b.scope_id)}** ({b.window}): {b.amount(s.spent)} of "
                f"{b.amount(b.limit)}{b.noun} spent, {b.amount(s.reserved)} held, {left}; resets "
                f"{_when(s.resets_at)}" + (f"; exempt: {exempt}" if exempt else "")
            )
        await tell(interaction, listing(lines, "No budgets here: `/llm budget set`."))

    @group.command(name="reset", description="Forget a budget's spend in its current window.")
    @app_commands.describe(
        window="The budget's window",
        member="A member's budget; with each:member, only this member's share",
        channel="A channel's budget; with each:channel, only this channel's share",
        role="A role's budget",
        model="A model budget (provider or provider/model)",
        each="The every-member or every-channel budget",
        plugin="A plugin's own allowance",
    )
    async def reset(
        interaction: discord.Interaction[Any],
        window: Window,
        member: discord.Member | None = None,
        channel: discord.abc.GuildChannel | None = None,
        role: discord.Role | None = None,
        model: str | None = None,
        each: Each | None = None,
        plugin: app_commands.Range[str, 1, 64] | None = None,
    ) -> None:
        ctx = await context(interaction)
        subject: str | None = None
        if each == "member" and member is not None:
            subject, member = str(member.id), None
        elif each == "channel" and channel is not None:
            subject, channel = str(channel.id), None
        kind, ident = _scope(member, channel, role, model, each, plugin)
        rows = await ctx.kernel.llm.reset_budget(
            ctx.guild_id, kind, ident, window, subject=subject, by=ctx.actor.id
        )
        name = who(kind, ident or "")
        await tell(interaction, f"Reset {name}'s {window} budget ({rows} counter(s)).")

    @group.command(name="remove", description="Remove a budget; calls stop meeting it at once.")
    @app_commands.describe(
        window="The budget's window",
        member="A member's budget",
        channel="A channel's budget",
        role="A role's budget",
        model="A model budget (provider or provider/model)",
        each="The every-member or every-channel budget",
        plugin="A plugin's own allowance",
    )
    async def remove(
        interaction: discord.Interaction[Any],
        window: Window,
        member: discord.Member | None = None,
        channel: discord.abc.GuildChannel | None = None,
        role: discord.Role | None = None,
        model: str | None = None,
        each: Each | None = None,
        plugin: app_commands.Range[str, 1, 64] | None = None,
    ) -> None:
        ctx = await context(interaction)
        kind, ident = _scope(member, channel, role, model, each, plugin)
        budget = await ctx.kernel.llm.remove_budget(
            ctx.guild_id, kind, ident, window, by=ctx.actor.id
        )
        await tell(
            interaction,
            f"Removed {who(budget.scope_kind, budget.scope_id)}'s {budget.window} budget.",
        )

    return group


def quota_lines(allowances: list[Any], you: str) -> list[str]:
    """One line per budget covering the member: left, of what, and when it resets."""
    lines = []
    for a in allowances:
        b = a.budget
        name = who(b.scope_kind, b.scope_id, you=you)
        if b.scope_id == "*":
            name = "Your own" if b.scope_kind == "member" else "This channel's own"
        if a.exempt:
            state = "you are exempt"
        else:
            state = (
                f"{b.amount(a.left)} of {b.amount(b.limit)}{b.noun} left; "
                f"resets {_when(a.resets_at)}"
            )
        lines.append(f"**{name}** ({b.window}): {state}")
    return lines


@app_commands.command(name="quota", description="What you have left of this server's models.")
@app_commands.guild_only()
async def quota(interaction: discord.Interaction[Any]) -> None:
    if interaction.guild is None:
        raise Refusal("This command only works in a server.")
    ctx = await context(interaction)
    channel = str(interaction.channel_id) if interaction.channel_id is not None else None
    places = places_of(interaction.channel, interaction.client)  # a thread counts under its channel
    allowances = await ctx.kernel.llm.quota(ctx.guild_id, ctx.actor, channel, places=places)
    lines = quota_lines(allowances, ctx.actor.id)
    await tell(
        interaction,
        listing(lines, "No model budget limits you here."),
    )
