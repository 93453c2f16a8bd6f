"""``/ambient enable|disable|status``: deterministic commands (no model), admins by default."""

from __future__ import annotations

from typing import Any


def service_of(kernel: Any) -> Any:
    """Imported on first use: ``gigi plugins list`` loads this module but runs nothing."""
    from gigi_ambient.service import service_of as of

    return of(kernel)


async def picture(
    ctx: Any,
    prompt: str,
    count: int = 1,
    edit: bool = False,
    source_message_id: str | None = None,
    reply_to: str | None = None,
) -> dict[str, Any]:
    from gigi_ambient.picture import picture as make

    return await make(ctx, prompt, count, edit, source_message_id, reply_to)


async def enable(ctx: Any, channel: str, persona: str) -> dict[str, Any]:
    svc = service_of(ctx.kernel)
    await svc.enable(ctx.guild_id, channel, persona, ctx.actor.id)
    return {
        "message": (
            f"Ambient mode is on in <#{channel}>: the persona reads every message there and "
            "answers when it should. It needs Discord's Message Content intent to read them."
        )
    }


async def disable(ctx: Any, channel: str) -> dict[str, Any]:
    gone = await service_of(ctx.kernel).disable(ctx.guild_id, channel)
    state = "is now off" if gone else "was not on"
    return {"message": f"Ambient mode {state} in <#{channel}>; its history is forgotten."}


async def status(ctx: Any) -> dict[str, Any]:
    svc = service_of(ctx.kernel)
    counts = await svc.today(ctx.guild_id)
    channels = sorted(await svc.channels(ctx.guild_id))
    settings = await svc.settings(ctx.guild_id)
    budget = settings.daily_token_budget
    where = ", ".join(f"<#{c}>" for c in channels) or "no channel"
    spend = f"{counts['tokens']} tokens" + (f" of {budget}" if budget else "")
    return {
        "message": (
            f"Ambient mode today in {where}: {counts['calls']} model calls, "
            f"{counts['answers']} answers, {counts['silences']} silences, "
            f"{counts['staff_notes']} staff notes, {counts['pictures']} pictures, "
            f"{counts['skipped']} skipped (rate limit or "
            f"budget), {counts['failures']} failures; {spend}."
            + (
                ""
                if settings.staff_channel
                else " No staff channel is set, so staff notes are not delivered: set "
                "`staff_channel` in the plugin's config."
            )
        ),
        "channels": channels,
        "today": counts,
    }


ACTIONS = {
    "ambient.enable": enable,
    "ambient.disable": disable,
    "ambient.status": status,
    "ambient.picture": picture,
}
