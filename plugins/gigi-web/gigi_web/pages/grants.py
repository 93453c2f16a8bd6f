"""Grants in a server: which role or member holds which capability; add and remove."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import ConfigError
from gigi_web.access import Member, Refused
from gigi_web.guards import checked_form, form_text
from gigi_web.pages.common import back, member_for, show
from gigi_web.params import ASCII_DIGITS

ADMINS_ONLY = (
    "Only server admins (Manage Server) add or remove grants, as with /gigi grants on "
    "Discord: a grant of grants.manage lets a member read this page, not widen their own rights."
)


def _admin(member: Member) -> None:
    """Changing grants needs Manage Server: a delegated grants.manage could otherwise grant
    its holder ``*`` (every capability) from here."""
    if not member.actor.is_admin:
        raise Refused(403, ADMINS_ONLY)


async def grant_list(request: Request, error: str | None = None, status: int = 200) -> Response:
    web, member = await member_for(request, "grants")
    guild_id = member.guild.id
    grants = await web.kernel.grants.list(guild_id)
    roles = await web.access.names("roles", guild_id)
    capabilities = sorted(web.kernel.registry.capabilities.items())
    return await show(
        request, web, member, "grants.html", status=status, grants=grants, roles=roles,
        capabilities=[(name, spec.description) for name, spec in capabilities], error=error,
        can_change=member.actor.is_admin,
    )  # fmt: skip


def _subject(form: object) -> tuple[str, str]:
    kind = form_text(form, "subject_type")  # type: ignore[arg-type]
    subject = form_text(form, "role" if kind == "role" else "user")  # type: ignore[arg-type]
    if kind not in ("role", "user"):
        raise ConfigError("Choose whether the grant is for a role or a member.")
    if not subject or not set(subject) <= ASCII_DIGITS or len(subject) > 20:
        what = "Pick a role" if kind == "role" else "Enter the member's user id (digits only)"
        raise ConfigError(f"{what}.")
    return kind, subject


async def add(request: Request) -> Response:
    web, member = await member_for(request, "grants")
    form = await checked_form(request)
    _admin(member)
    try:
        kind, subject = _subject(form)
        capability = form_text(form, "capability", limit=128)
        created = await web.kernel.add_grant(
            member.guild.id, capability, kind, subject, by=member.actor.id
        )
    except ConfigError as exc:
        return await grant_list(request, error=str(exc), status=400)
    notice = f"Granted {capability}." if created else f"{capability} was already granted."
    return back(request, f"/g/{member.guild.id}/grants", notice)


async def remove(request: Request) -> Response:
    web, member = await member_for(request, "grants")
    form = await checked_form(request)
    _admin(member)
    try:
        kind, subject = _subject(form)
        capability = form_text(form, "capability", limit=128)
        await web.kernel.remove_grant(
            member.guild.id, capability, kind, subject, by=member.actor.id
        )
    except ConfigError as exc:
        return await grant_list(request, error=str(exc), status=400)
    return back(request, f"/g/{member.guild.id}/grants", f"Removed {capability}.")
