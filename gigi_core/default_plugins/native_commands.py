"""Handlers of the native ``gigi`` commands: channel observation states and your own data.

They act on the caller's guild and, for privacy, on the caller alone: no argument can name
another member, so an export or a delete for someone else cannot be asked for.
"""

from __future__ import annotations

from typing import Any

STATE_SENTENCES = {
    "active": (
        "Gigi's plugins see new messages in <#{channel}> again (only those enabled here, "
        "each within its own settings)."
    ),
    "paused": (
        "Paused: no plugin sees messages in <#{channel}> from now on. @mentions and commands "
        "still work there. Nothing already stored is deleted; /gigi channel resume undoes this."
    ),
    "secure": (
        "Secured: no plugin sees messages in <#{channel}>, and plugins were told to drop what "
        "they hold in memory for it. @mentions and commands still work. The secure period is "
        "recorded; /gigi channel resume ends it."
    ),
}


def _channel(ctx: Any, channel: str | None) -> str:
    from gigi_core import ToolExecutionError

    target = channel or ctx.channel_id
    if not target:
        raise ToolExecutionError("name a channel: this request did not come from one")
    return str(target)


async def _set(ctx: Any, channel: str | None, state: str) -> dict[str, Any]:
    target = _channel(ctx, channel)
    change = await ctx.kernel.set_channel_state(ctx.guild_id, target, state, by=ctx.actor.id)
    unchanged = change.before == change.after
    message = STATE_SENTENCES[state].format(channel=target)
    if unchanged:
        message = f"(No change: it was already {state}.) " + message
    return {"channel_id": target, "state": state, "before": change.before, "message": message}


async def channel_pause(ctx: Any, channel: str | None = None) -> dict[str, Any]:
    return await _set(ctx, channel, "paused")


async def channel_resume(ctx: Any, channel: str | None = None) -> dict[str, Any]:
    return await _set(ctx, channel, "active")


async def channel_secure(ctx: Any, channel: str | None = None) -> dict[str, Any]:
    return await _set(ctx, channel, "secure")


async def channel_status(ctx: Any, channel: str | None = None) -> dict[str, Any]:
    target = _channel(ctx, channel)
    state = await ctx.kernel.channels.get(ctx.guild_id, target)
    return {
        "channel_id": target,
        "state": state,
        "message": f"<#{target}> is {state}. " + STATE_SENTENCES[state].format(channel=target),
    }


async def privacy_info(ctx: Any) -> dict[str, Any]:
    statements = await ctx.kernel.privacy.statements(ctx.guild_id)
    return {"guild_id": ctx.guild_id, "plugins": statements}


async def privacy_export(ctx: Any) -> dict[str, Any]:
    """The caller's own data; surfaces deliver it as a JSON file (``file`` names it)."""
    data = await ctx.kernel.privacy.export(ctx.actor.id, ctx.guild_id)
    return {"file": f"gigi-data-{ctx.guild_id}-{ctx.actor.id}.json", "data": data}


async def privacy_delete(ctx: Any) -> dict[str, Any]:
    """Runs only after the member confirmed (the manifest says ``confirm: always``)."""
    counts = await ctx.kernel.privacy.delete(
        ctx.actor.id, ctx.guild_id, by=ctx.actor.id, keep_run=ctx.run_id
    )
    total = counts["total"]
    counts["message"] = (
        f"Deleted {total} item(s) Gigi and its plugins held about you here."
        if total
        else "Gigi and its plugins held nothing about you here; nothing was deleted."
    )
    if counts.get("kept", {}).get("personal_llm_keys"):
        counts["message"] += (
            " Your personal LLM keys serve you in every server, so they were kept; the "
            "operator removes them everywhere with `gigi privacy delete --user`."
        )
    return counts


async def guild_purge(ctx: Any, guild_id: str) -> None:
    """The scheduled job GuildLeft defers: runs when the grace period has passed."""
    await ctx.kernel.privacy.purge_guild(guild_id)


async def forget_run(ctx: Any, run_id: str) -> None:
    """The job ``/gigi privacy delete`` queues: its own finished run drops the member's id."""
    await ctx.kernel.privacy.forget_run(run_id)
