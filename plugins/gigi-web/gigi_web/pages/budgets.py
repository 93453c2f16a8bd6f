"""The server's model budgets and personal-key policy, as `/llm budget` and `/llm policy
personal-keys` do it: every budget's window (spent, held, left, reset) for readers of
usage; setting, resetting and removing them, and the policy, need ``llm.provider.write``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import GigiError
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show
from gigi_web.params import ascii_int

WRITE = "llm.provider.write"
SCOPES = {
    "guild": "The whole server",
    "member": "A member (user id, or * for each member on their own)",
    "channel": "A channel (channel id, or * for each channel on its own)",
    "role": "A role (shared by the members who hold it)",
    "model": "A provider or provider/model (openai/gpt-4o)",
    "plugin": "A plugin's own allowance (its name)",
}
WINDOWS = ("daily", "weekly", "monthly")
UNITS = ("tokens", "money")
PERSONAL_KEYS = {
    "off": "Members' own keys are never used here; the server's models answer.",
    "dm-only": "Members' own keys answer them only in DMs, never in this server.",
    "guild-allowed": "Members may have their own keys answer them in this server too.",
}


async def budget_page(request: Request, error: str | None = None, status: int = 200) -> Response:
    web, member = await member_for(request, "budgets")
    guild_id = member.guild.id
    llm = web.kernel.llm
    roles = await web.access.names("roles", guild_id)
    channels = await web.access.names("channels", guild_id)
    rows = [
        (s, _scope_label(s.budget.scope_kind, s.budget.scope_id, roles, channels))
        for s in await llm.budget_status(guild_id)
    ]
    return await show(
        request, web, member, "budgets.html", status=status, error=error, rows=rows,
        policy=await llm.policy(guild_id), personal_keys=PERSONAL_KEYS, scopes=SCOPES,
        windows=WINDOWS, units=UNITS, can_write=await web.access.holds(member, WRITE),
    )  # fmt: skip


def _scope_label(kind: str, ident: str, roles: dict[str, str], channels: dict[str, str]) -> str:
    """Who a budget limits, in names where the server has them (display only)."""
    if kind == "guild":
        return "The whole server"
    if ident == "*":
        return f"Each {kind} on their own"
    if kind == "role":
        return f"Role @{roles.get(ident, ident)}"
    if kind == "channel":
        return f"Channel #{channels.get(ident, ident)}"
    return f"{kind.capitalize()} {ident}"


def _named(form: Any) -> tuple[str, str | None, str]:
    """The (scope kind, scope id, window) a form names, or a GigiError saying what to pick."""
    kind = form_text(form, "scope_kind", limit=16)
    if kind not in SCOPES:
        raise GigiError(f"Pick who the budget limits: one of {', '.join(SCOPES)}.")
    ident = form_text(form, "scope_id", limit=200) or None
    window = form_text(form, "window", limit=16)
    if window not in WINDOWS:
        raise GigiError(f"Pick the budget's window: one of {', '.join(WINDOWS)}.")
    return kind, (None if kind == "guild" else ident), window


async def _change(request: Request, change: Any) -> Response:
    web, member = await member_for(request, "budgets")
    await web.access.check(member, WRITE)
    form = await checked_form(request)
    try:
        notice = await change(web.kernel.llm, member.guild.id, form, member.actor.id)
    except GigiError as exc:  # says which field to change; budgets hold no secrets
        return await budget_page(request, error=str(exc), status=400)
    return back(request, f"/g/{member.guild.id}/budgets", notice)


async def set_budget(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        kind, ident, window = _named(form)
        unit = form_text(form, "unit", limit=16) or "tokens"
        if unit not in UNITS:
            raise GigiError("Unit: pick tokens or money.")
        limit = form_text(form, "limit", limit=32)
        if not limit:
            raise GigiError("Limit: enter tokens per window (200000), or an amount (2.50).")
        hour = form_text(form, "reset_hour", limit=4)
        reset_hour = ascii_int(hour, 0, 23)
        if hour and reset_hour is None:
            raise GigiError("Reset hour: a UTC hour from 0 to 23, or leave it blank.")
        budget = await llm.set_budget(
            guild, kind, ident, limit=limit, unit=unit, window=window,
            reset_hour=reset_hour, by=by,
        )  # fmt: skip
        return f"The {budget.window} budget is {budget.show(budget.limit)} now."

    return await _change(request, change)


async def reset_budget(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        kind, ident, window = _named(form)
        rows = await llm.reset_budget(guild, kind, ident, window, by=by)
        return f"Reset the {window} budget's spend ({rows} counter(s))."

    return await _change(request, change)


async def remove_budget(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        kind, ident, window = _named(form)
        budget = await llm.remove_budget(guild, kind, ident, window, by=by)
        return f"Removed the {budget.window} budget; calls stop meeting it at once."

    return await _change(request, change)


async def set_personal_keys(request: Request) -> Response:
    async def change(llm: Any, guild: str, form: Any, by: str) -> str:
        value = form_text(form, "personal_keys", limit=16)
        if value not in PERSONAL_KEYS:
            raise GigiError(f"Personal keys: pick one of {', '.join(PERSONAL_KEYS)}.")
        policy = await llm.set_policy(guild, personal_keys=value, by=by)
        return f"Personal keys: {policy.personal_keys}. {PERSONAL_KEYS[policy.personal_keys]}"

    return await _change(request, change)
