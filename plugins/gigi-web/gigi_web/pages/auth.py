"""Sign in with Discord (OAuth2 code + PKCE + state) and sign out."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gigi_web import oauth
from gigi_web.app import web_of
from gigi_web.guards import checked_form, keep_sign_in, replace_session, session_of
from gigi_web.sessions import SessionStore

log = logging.getLogger(__name__)


async def home(request: Request) -> Response:
    if session_of(request).signed_in:
        return RedirectResponse("/servers", status_code=303)
    return web_of(request).render(request, "signin.html")


def sessions_of(request: Request) -> SessionStore:
    store: SessionStore = request.app.state.sessions
    return store


async def signin(request: Request) -> Response:
    web = web_of(request)
    pending, url = oauth.start(web.settings)
    await keep_sign_in(request, sessions_of(request), pending)
    return RedirectResponse(url, status_code=303)


async def callback(request: Request) -> Response:
    web = web_of(request)
    store = sessions_of(request)
    session = session_of(request)
    pending = await store.take_pending(session)  # once, whatever happens next
    if request.query_params.get("error"):
        return web.render(
            request,
            "error.html",
            status=400,
            message="Discord sign-in was cancelled or refused. Sign in again to continue.",
        )
    try:
        pending = oauth.claim(pending, request.query_params.get("state"))
        token, user = await oauth.finish(
            web.settings, pending, request.query_params.get("code", "")[:512]
        )
    except oauth.SignInRefused as exc:
        log.info("web sign-in refused: %s", exc)
        return web.render(
            request, "error.html", status=400, message=f"{exc} Sign in again to continue."
        )
    fresh = await store.rotate(session, user_id=user.id, username=user.name, access_token=token)
    replace_session(request, fresh)
    log.info("web sign-in: user %s", user.id)
    return RedirectResponse("/servers", status_code=303)


async def signout(request: Request) -> Response:
    await checked_form(request)
    store = sessions_of(request)
    session = session_of(request)
    token = session.access_token
    await store.drop(session)
    replace_session(request, store.transient())
    if token:
        await oauth.revoke(web_of(request).settings, token)
    return RedirectResponse("/", status_code=303)
