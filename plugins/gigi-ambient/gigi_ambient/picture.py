"""``ambient.picture``: pictures for a persona's answer, made by another plugin's action.

A plugin cannot implement another plugin's action, so the image plugin declares its own
action and marks it with ``x-gigi-implements: ambient.picture`` at the root of its args
schema; this handler finds it, checks the budget and calls it through ``kernel.call_tool``
as the member who asked, so that action's own capability, safety class and the guild's
consent apply too. An implementation that posts the pictures itself, as files (the
``images`` plugin), answers ``status: posted``; one that returns URLs gets them posted.
"""

from __future__ import annotations

import logging
from typing import Any

from gigi_ambient.budget import BudgetReached
from gigi_ambient.responder import Settings

log = logging.getLogger(__name__)
ACTION = "ambient.picture"
MARK = "x-gigi-implements"
MAX = 4


def implementations(kernel: Any) -> list[str]:
    """Loaded actions declaring themselves an implementation of ``ambient.picture``."""
    return sorted(
        name
        for name, spec in kernel.registry.actions.items()
        if spec.plugin != "ambient" and (spec.args or {}).get(MARK) == ACTION
    )


def implementation(kernel: Any, pinned: str | None) -> str | None:
    """The guild's pinned one (only if it is an implementation), else the first by name."""
    found = implementations(kernel)
    if pinned:
        return pinned if pinned in found else None
    return found[0] if found else None


def outcome(
    status: str, action: str | None = None, urls: list[str] | None = None, pictures: int = 0
) -> dict[str, Any]:
    return {
        "status": status,
        "action": action,
        "urls": urls or [],
        "pictures": pictures or len(urls or []),
    }


def posted_count(result: Any, count: int) -> int:
    """How many pictures an implementation posted itself as files (0: it posted none)."""
    if not isinstance(result, dict) or result.get("status") != "posted":
        return 0
    pictures = result.get("pictures")
    return min(count, len(pictures)) if isinstance(pictures, list) else 0


def urls_of(result: Any, count: int) -> list[str]:
    """``{"urls": [...]}`` with http(s) strings; anything else is no picture."""
    urls = result.get("urls") if isinstance(result, dict) else None
    if not isinstance(urls, list):
        return []
    good = [u for u in urls if isinstance(u, str) and u.startswith(("https://", "http://"))]
    return [u for u in good if len(u) <= 2000 and not any(c.isspace() for c in u)][:count]


async def picture(
    ctx: Any,
    prompt: str,
    count: int = 1,
    edit: bool = False,
    source_message_id: str | None = None,
    reply_to: str | None = None,
) -> dict[str, Any]:
    from gigi_ambient.service import service_of

    svc = service_of(ctx.kernel)
    settings = Settings.from_config(ctx.config)
    action = implementation(ctx.kernel, settings.picture_action)
    if action is None:
        return outcome("no_implementation")
    count = max(1, min(MAX, count))
    cost = count * settings.picture_tokens
    try:
        async with svc.budget.spend(ctx.guild_id, settings.daily_token_budget, cost) as spend:
            result = await _make(ctx, action, prompt, count, edit, source_message_id, reply_to)
            if isinstance(result, list):  # the pictures made are what is spent
                spend.used = len(result) * settings.picture_tokens
            elif result["status"] == "posted":
                spend.used = result["pictures"] * settings.picture_tokens
    except BudgetReached:
        return outcome("over_budget", action)
    if not isinstance(result, list):
        if result["status"] == "posted":
            svc.count(ctx.guild_id, pictures=result["pictures"])
        return result
    svc.count(ctx.guild_id, pictures=len(result))
    return outcome("made", action, result)


async def _make(
    ctx: Any,
    action: str,
    prompt: str,
    count: int,
    edit: bool,
    source_message_id: str | None,
    reply_to: str | None = None,
) -> list[str] | dict[str, Any]:
    """The image action's URLs, ``posted`` when it posted files itself, or why neither."""
    from gigi_core import ConfirmationRequired, PolicyDenied, ToolError

    offered = {
        "prompt": prompt,
        "count": count,
        "edit": edit and source_message_id is not None,
        "source_message_id": source_message_id if edit else None,
        "source_channel_id": ctx.channel_id if edit and source_message_id else None,
        "reply_to": reply_to,
    }
    declared = (ctx.kernel.registry.actions[action].args.get("properties") or {}).keys()
    args = {k: v for k, v in offered.items() if k in declared and v is not None}
    try:
        called = await ctx.kernel.call_tool(
            action,
            args,
            actor=ctx.actor,
            guild_id=ctx.guild_id,
            channel_id=ctx.channel_id,
            run_id=ctx.run_id,
        )
    except PolicyDenied:
        return outcome("denied", action)
    except ConfirmationRequired:  # nobody is there to confirm an ambient picture
        return outcome("needs_confirmation", action)
    except ToolError as exc:
        log.warning("ambient: %s failed (%s)", action, type(exc).__name__)
        return outcome("failed", action)
    posted = posted_count(called.result, count)
    if posted:  # pictures as files, already in the channel: nothing to post as links
        return outcome("posted", action, pictures=posted)
    urls = urls_of(called.result, count)
    return urls or outcome("bad_result", action)


async def make_and_post(svc: Any, event: Any, delivery: Any) -> str:
    """``ambient.picture`` as the author; the URLs are posted and the outcome is noted in
    the run's trace (``no_implementation`` when no image plugin is installed)."""
    from gigi_core import Actor, ConfirmationRequired, PolicyDenied, ToolError

    source = event.message_id if event.attachments else event.reply_to_id
    args = {
        "prompt": delivery.picture,
        "count": max(1, min(4, delivery.picture_count or 1)),
        "edit": bool(delivery.picture_edit and source),
        "source_message_id": source if delivery.picture_edit else None,
    }
    if delivery.channel_id == event.channel_id and str(event.message_id).isdigit():
        args["reply_to"] = event.message_id  # the pictures answer the message, as files
    urls: list[str] = []
    try:
        called = await svc.kernel.call_tool(
            "ambient.picture",
            args,
            actor=delivery.actor or Actor(id=event.author_id),
            guild_id=event.guild_id,
            channel_id=event.channel_id,
            run_id=delivery.run_id,
        )
        status, urls = called.result["status"], called.result["urls"]
    except PolicyDenied:
        status = "denied"
    except ConfirmationRequired:
        status = "needs_confirmation"
    except ToolError as exc:
        log.warning("ambient: the picture failed (%s)", type(exc).__name__)
        status = "failed"
    if urls:
        here = delivery.channel_id == event.channel_id
        reply_to = event.message_id if here else None
        posted = await svc._post(event.guild_id, delivery.channel_id, "\n".join(urls), reply_to)
        status = "posted" if posted is not None else "not_posted"
    log.info("ambient: picture %s", status)
    if delivery.run_id is not None:
        try:
            await svc.kernel.agent.note(delivery.run_id, status, tool="ambient.picture")
        except Exception as exc:  # the trace note must never lose the answer
            log.warning("ambient: picture note not written (%s)", type(exc).__name__)
    return status
