"""The server list: servers you manage (or hold a dashboard capability in) where Gigi is,
and the others where you can see your own data."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gigi_web.access import ADMIN_PAGES
from gigi_web.app import web_of
from gigi_web.guards import session_of
from gigi_web.pages.common import guild_id_of, take_flash


async def server_list(request: Request) -> Response:
    web = web_of(request)
    session = session_of(request)
    if not session.signed_in:
        return RedirectResponse("/", status_code=303)
    managed, others = [], []
    for guild in await web.access.guilds(session):
        member = await web.access.member(session, guild.id)
        pages = await web.access.pages(member)
        (managed if any(p in ADMIN_PAGES for p in pages) else others).append((guild, pages))
    return web.render(
        request, "servers.html", managed=managed, others=others, flash=take_flash(request)
    )


async def guild_home(request: Request) -> Response:
    web = web_of(request)
    member = await web.access.member(session_of(request), guild_id_of(request))
    pages = await web.access.pages(member)
    first = next((p for p in pages if p in ADMIN_PAGES), "data")
    return RedirectResponse(f"/g/{member.guild.id}/{first}", status_code=303)
