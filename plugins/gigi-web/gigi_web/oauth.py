"""Discord sign-in: OAuth2 authorization code with PKCE (S256) and a one-time, expiring
``state`` bound to the browser's session. ~100 lines over the kernel's owned httpx client."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
import time
from urllib.parse import urlencode

from gigi_web.discord_api import DiscordError, DiscordUser, get_json, http
from gigi_web.sessions import PendingSignIn
from gigi_web.settings import WebSettings

log = logging.getLogger(__name__)

SCOPES = "identify guilds"
STATE_SECONDS = 600.0


class SignInRefused(Exception):
    """The callback does not match a sign-in this browser started; the text says what to do."""


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def start(settings: WebSettings) -> tuple[PendingSignIn, str]:
    """A fresh state and PKCE verifier (for the session to keep) and the authorize URL."""
    pending = PendingSignIn(
        state=secrets.token_urlsafe(32),
        verifier=secrets.token_urlsafe(64),
        expires=time.time() + STATE_SECONDS,
    )
    query = urlencode(
        {
            "response_type": "code",
            "client_id": settings.client_id,
            "scope": SCOPES,
            "state": pending.state,
            "redirect_uri": settings.redirect_uri,
            "code_challenge": challenge_of(pending.verifier),
            "code_challenge_method": "S256",
            "prompt": "none",
        }
    )
    return pending, f"{settings.authorize_url}?{query}"


def claim(pending: PendingSignIn | None, state: str | None) -> PendingSignIn:
    """The pending sign-in, if ``state`` names it. The caller has taken it from the session
    already (``SessionStore.take_pending``), so it is used up whatever the outcome."""
    if pending is None:
        raise SignInRefused("This sign-in link was already used or never started here.")
    if not state or not hmac.compare_digest(pending.state.encode(), state.encode()):
        raise SignInRefused("This sign-in does not belong to this browser.")
    if pending.expires < time.time():
        raise SignInRefused("This sign-in took too long and expired.")
    return pending


async def finish(
    settings: WebSettings, pending: PendingSignIn, code: str
) -> tuple[str, DiscordUser]:
    """Trade the code (with the PKCE verifier) for an access token; who signed in."""
    try:
        reply = await http().post(
            f"{settings.discord_api}/oauth2/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": settings.redirect_uri,
                "code_verifier": pending.verifier,
            },
            auth=(settings.client_id, settings.client_secret),
            headers={"Accept": "application/json"},
        )
    except Exception as exc:
        raise DiscordError(f"Discord could not be reached ({type(exc).__name__})") from None
    if reply.status_code != 200:
        raise SignInRefused("Discord did not accept this sign-in; start again.")
    body = reply.json()
    token = body.get("access_token") if isinstance(body, dict) else None
    granted = set(str(body.get("scope", "")).split()) if isinstance(body, dict) else set()
    if not isinstance(token, str) or not {"identify", "guilds"} <= granted:
        raise SignInRefused("Discord's answer lacks the identify and guilds permissions.")
    me = await get_json(settings, "/users/@me", f"Bearer {token}")
    if not isinstance(me, dict) or not re.fullmatch(r"[0-9]{1,20}", str(me.get("id", ""))):
        raise SignInRefused("Discord did not say who signed in; start again.")
    return token, DiscordUser(id=str(me["id"]), name=str(me.get("username") or me["id"]))


async def revoke(settings: WebSettings, token: str) -> bool:
    """Ask Discord to revoke a signed-out session's access token, so a copy of it (a
    backup of the store, a leaked log of the browser) is worth nothing; False if it
    could not (sign-out goes on: the session row is gone either way)."""
    try:
        reply = await http().post(
            f"{settings.discord_api}/oauth2/token/revoke",
            data={"token": token, "token_type_hint": "access_token"},
            auth=(settings.client_id, settings.client_secret),
            headers={"Accept": "application/json"},
        )
    except Exception as exc:
        log.info("web sign-out: Discord could not be reached to revoke (%s)", type(exc).__name__)
        return False
    if reply.status_code != 200:
        log.info("web sign-out: Discord answered %s to the revocation", reply.status_code)
        return False
    return True
