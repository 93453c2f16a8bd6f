"""What the per-server pages share: the guild id from the path, the member, redirects."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gigi_web.access import Member
from gigi_web.app import Web, web_of
from gigi_web.guards import session_of


def guild_id_of(request: Request) -> str:
    return str(request.path_params["guild_id"])


async def member_for(request: Request, page: str) -> tuple[Web, Member]:
    """The web app and the member, if policy allows ``page`` here (checked on every request)."""
    web = web_of(request)
    member = await web.access.require(session_of(request), guild_id_of(request), page)
    return web, member


def back(request: Request, path: str, notice: str | None = None) -> Response:
    """Post/redirect/get: the notice shows once on the next page."""
    if notice is not None:
        session_of(request).flash = notice
    return RedirectResponse(path, status_code=303)


def take_flash(request: Request) -> str | None:
    session = session_of(request)
    notice, session.flash = session.flash, None
    return notice


async def show(
    request: Request, web: Web, member: Member, template: str, status: int = 200, **context: object
) -> Response:
    """Render a server page with its navigation (only the pages this member may open)."""
    return web.render(
        request,
        template,
        status=status,
        guild=member.guild,
        pages=await web.access.pages(member),
        flash=take_flash(request),
        **context,
    )
