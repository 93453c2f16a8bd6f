"""`/agent trace|cancel|confirm|reject|call`: steer runs of this server, and exact tool calls."""

from __future__ import annotations

import json
from typing import Any

import discord
from discord import app_commands

from gigi_core import GigiError
from gigi_core.surfaces import ConfirmationError, Request
from gigi_discord.commands.common import Ctx, choices, context
from gigi_discord.confirm import decide
from gigi_discord.errors import Refusal, defer, sentence, tell
from gigi_discord.identity import channel_checker, channel_lister
from gigi_discord.render import send_reply

NOT_YOURS = "Only the person who started that run, or a server admin, can see or steer it."


async def _own_run(ctx: Ctx, run_id: str) -> Any:
    """The run, if it belongs to this server and to this actor (or the actor is an admin)."""
    try:
        run = await ctx.bot.runtime.runs.get(run_id.strip())
    except GigiError:
        raise Refusal(f"There is no run `{run_id.strip()[:80]}` in this server.") from None
    if run.guild_id != ctx.guild_id:
        raise Refusal(f"There is no run `{run_id.strip()[:80]}` in this server.")
    if run.actor_id != ctx.actor.id and not ctx.actor.is_admin:
        raise Refusal(NOT_YOURS)
    return run


def format_trace(data: dict[str, Any]) -> str:
    used = data["budgets_used"]
    lines = [
        f"Run `{data['run_id']}` ({data['kind']}): **{data['status']}**"
        f" — {data['termination_reason'] or 'in progress'}",
        f"Used {used['steps']} steps, {used['tool_calls']} tool calls, "
        f"{used['llm_calls']} model calls, {used['tokens']} tokens.",
    ]
    for st in data["steps"]:
        tool = f" `{st['tool']}`" if st["tool"] else ""
        decision = f" ({st['decision']})" if st["decision"] else ""
        # a refusal's class and sanitised name, field path or capability: never a value
        why = f" — `{st['reason']}`" if st.get("reason") else ""
        lines.append(f"{st['index']}. {st['kind']}{tool}{decision}: {st['status']}{why}")
    for c in data["confirmations"]:
        lines.append(f"Confirmation `{c['id']}` for `{c['action']}`: {c['state']}")
    text = "\n".join(lines)
    return text if len(text) <= 1990 else text[:1985] + "\n…"


async def _actions(interaction: discord.Interaction[Any], current: str) -> list[Any]:
    """Only actions of plugins enabled here that this user may use: disabled ones are invisible."""
    ctx = await context(interaction)
    offered = await ctx.kernel.policy.offerable(ctx.actor, ctx.guild_id)
    return choices([a.name for a in offered], current)


def agent_root() -> app_commands.Group:
    root = app_commands.Group(name="agent", description="Inspect and steer Gigi's runs.")

    @root.command(name="trace", description="Show what a run did (metadata only).")
    @app_commands.describe(run="A run id; empty for your last run here")
    async def trace(interaction: discord.Interaction[Any], run: str | None = None) -> None:
        ctx = await context(interaction)
        runs = ctx.bot.runtime.runs
        if run:
            row = await _own_run(ctx, run)
        else:
            try:
                actor_id = None if ctx.actor.is_admin else ctx.actor.id
                row = await runs.last(guild_id=ctx.guild_id, actor_id=actor_id)
            except GigiError:
                raise Refusal("There are no runs to show yet.") from None
        text = format_trace(await ctx.bot.runtime.trace(row.id))
        why = getattr(ctx.bot, "failures", {}).get(row.id) if ctx.actor.is_admin else None
        if why:  # kept in memory by this process; the store holds metadata only
            text = f"{text}\n**What happened** (only admins see this): {why}"[:2000]
        await tell(interaction, text)

    @root.command(name="cancel", description="Cancel a run that is working or waiting.")
    @app_commands.describe(run="The run id")
    async def cancel(interaction: discord.Interaction[Any], run: str) -> None:
        ctx = await context(interaction)
        row = await _own_run(ctx, run)
        try:
            cancelled = await ctx.bot.runtime.cancel(row.id, ctx.actor, guild_id=ctx.guild_id)
        except ConfirmationError as exc:
            raise Refusal(sentence(str(exc))) from None
        if cancelled:
            await tell(interaction, f"Cancelled run `{row.id}`; nothing more will run for it.")
        else:
            status = await ctx.bot.runtime.runs.status(row.id)
            await tell(interaction, f"Run `{row.id}` had already ended ({status}).")

    async def _decide(interaction: discord.Interaction[Any], run: str, approve: bool) -> None:
        ctx = await context(interaction)
        run_id = (await _own_run(ctx, run)).id
        try:
            pending = await ctx.bot.runtime.confirmations.pending_for_run(run_id)
        except GigiError:
            raise Refusal(f"Run `{run_id[:80]}` has nothing waiting for a confirmation.") from None
        await decide(interaction, pending.id, approve=approve, button=False)

    @root.command(name="confirm", description="Approve the action a run is waiting on.")
    @app_commands.describe(run="The run id")
    async def confirm(interaction: discord.Interaction[Any], run: str) -> None:
        await _decide(interaction, run, True)

    @root.command(name="reject", description="Reject the action a run is waiting on.")
    @app_commands.describe(run="The run id")
    async def reject(interaction: discord.Interaction[Any], run: str) -> None:
        await _decide(interaction, run, False)

    @root.command(name="call", description="Run one action exactly, without the model.")
    @app_commands.describe(action="An action of a plugin enabled here", args="Arguments as JSON")
    @app_commands.autocomplete(action=_actions)
    async def call(
        interaction: discord.Interaction[Any],
        action: str,
        args: app_commands.Range[str, 0, 4000] = "{}",
    ) -> None:
        ctx = await context(interaction)
        offered = {a.name for a in await ctx.kernel.policy.offerable(ctx.actor, ctx.guild_id)}
        if action not in offered:
            raise Refusal(f"No action called `{action[:80]}` is available to you in this server.")
        try:
            parsed = json.loads(args or "{}")
        except json.JSONDecodeError as exc:
            raise Refusal(f"The arguments are not valid JSON ({exc.msg}).") from None
        request = Request(
            actor=ctx.actor,
            guild_id=ctx.guild_id,
            channel_id=str(interaction.channel_id) if interaction.channel_id else None,
            kind="slash",
            text="",
            channel_visible=channel_checker(interaction.guild, interaction.user),
            visible_channels=channel_lister(
                interaction.guild, interaction.user, shown_in=interaction.channel
            ),
        )
        await defer(interaction, ephemeral=False)
        try:
            reply = await ctx.bot.runtime.direct(request, action, parsed)
        except GigiError as exc:
            await tell(interaction, sentence(str(exc)))
            return
        await send_reply(interaction, reply, bot=ctx.bot, admin=ctx.actor.is_admin)

    return root
