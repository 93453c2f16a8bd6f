"""Sign in with Discord (OAuth2 code + PKCE + state) and sign out."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gigi_web import oauth
from gigi_web.app import web_of
from gigi_web.guards import checked_form, kept_session, replace_session, session_of

log = logging.getLogger(__name__)


async def home(request: Request) -> Response:
    if session_of(request).signed_in:
        return RedirectResponse("/servers", status_code=303)
    return web_of(request).render(request, "signin.html")


async def signin(request: Request) -> Response:
    web = web_of(request)
    session = kept_session(request, request.app.state.sessions, web.settings.rate_burst)
    return RedirectResponse(oauth.start(session, web.settings), status_code=303)


async def callback(request: Request) -> Response:
    web = web_of(request)
    session = session_of(request)
    if request.query_params.get("error"):
        session.pending = None
        return web.render(
            request,
            "error.html",
            status=400,
            message="Discord sign-in was cancelled or refused. Sign in again to continue.",
        )
    try:
        pending = oauth.claim(session, request.query_params.get("state"))
        token, user = await oauth.finish(
            web.settings, pending, request.query_params.get("code", "")[:512]
        )
    except oauth.SignInRefused as exc:
        log.info("web sign-in refused: %s", exc)
        return web.render(
            request, "error.html", status=400, message=f"{exc} Sign in again to continue."
        )
    fresh = request.app.state.sessions.rotate(session, web.settings.rate_burst)
    fresh.user_id, fresh.username, fresh.access_token = user.id, user.name, token
    replace_session(request, fresh)
    log.info("web sign-in: user %s", user.id)
    return RedirectResponse("/servers", status_code=303)


async def signout(request: Request) -> Response:
    await checked_form(request)
    store = request.app.state.sessions
    store.drop(session_of(request))
    replace_session(request, store.transient(web_of(request).settings.rate_burst))
    return RedirectResponse("/", status_code=303)
