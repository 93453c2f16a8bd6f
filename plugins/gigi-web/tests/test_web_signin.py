"""Sign in with Discord: code + PKCE + one-time state, the session cookie, the server list."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

from web_world import ADMIN, ALPHA, BETA, MEMBER, NO_BOT


async def test_sign_in_uses_pkce_and_state_and_lists_servers(dashboard) -> None:
    browser = dashboard.browser()
    start = await browser.client.get("/signin")
    query = parse_qs(urlsplit(start.headers["location"]).query)
    assert query["scope"] == ["identify guilds"]
    assert query["code_challenge_method"] == ["S256"] and len(query["state"][0]) >= 32
    assert query["redirect_uri"] == ["http://dash.test/auth/callback"]
    cookie = start.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie

    done = await browser.sign_in(ADMIN)
    assert done.status_code == 303 and done.headers["location"] == "/servers"
    assert "set-cookie" in done.headers  # a fresh session id after sign-in (no fixation)
    exchange = dashboard.fake.token_requests[-1]
    assert exchange["grant_type"] == "authorization_code" and len(exchange["code_verifier"]) >= 43

    servers = await browser.client.get("/servers")
    assert servers.status_code == 200
    manage, _, others = servers.text.partition("Your data in other servers")
    assert f"/g/{ALPHA}" in manage and f"/g/{BETA}/data" in others
    assert f"/g/{NO_BOT}" not in servers.text  # the bot is not there
    assert "Signed in as ada" in servers.text


async def test_a_member_sees_only_their_data_page(dashboard) -> None:
    browser = dashboard.browser()
    await browser.sign_in(MEMBER)
    servers = await browser.client.get("/servers")
    manage, _, others = servers.text.partition("Your data in other servers")
    assert f"/g/{BETA}" in manage  # bob manages Beta
    assert f"/g/{ALPHA}/data" in others
    home = await browser.client.get(f"/g/{ALPHA}")
    assert home.headers["location"] == f"/g/{ALPHA}/data"


async def test_sign_out_ends_the_session(dashboard) -> None:
    browser = dashboard.browser()
    await browser.sign_in(ADMIN)
    old_cookie = browser.client.cookies.get("gigi_session")
    out = await browser.post("/signout", {})
    assert out.status_code == 303
    assert (await browser.client.get("/servers")).headers["location"] == "/"
    browser.client.cookies.set("gigi_session", old_cookie)  # the old cookie is dead too
    assert (await browser.client.get(f"/g/{ALPHA}/plugins")).status_code == 401


def _tokens_of(fake, user: str) -> set[str]:
    return {token for token, who in fake.tokens.items() if who == user}


async def test_sign_out_revokes_the_discord_token(dashboard) -> None:
    browser = dashboard.browser()
    before = _tokens_of(dashboard.fake, ADMIN)
    await browser.sign_in(ADMIN)
    [token] = _tokens_of(dashboard.fake, ADMIN) - before
    assert (await browser.post("/signout", {})).status_code == 303
    assert dashboard.fake.revoked[-1] == token and token not in dashboard.fake.tokens


async def test_sign_out_goes_on_when_discord_cannot_revoke(dashboard, caplog) -> None:
    browser = dashboard.browser()
    before = _tokens_of(dashboard.fake, ADMIN)
    await browser.sign_in(ADMIN)
    [token] = _tokens_of(dashboard.fake, ADMIN) - before
    dashboard.fake.revoke_down = True
    caplog.set_level(logging.INFO, logger="gigi_web.oauth")
    try:
        out = await browser.post("/signout", {})
    finally:
        dashboard.fake.revoke_down = False
    assert out.status_code == 303 and out.headers["location"] == "/"
    assert (await browser.client.get(f"/g/{ALPHA}/plugins")).status_code == 401
    assert token in dashboard.fake.tokens  # not revoked: it lapses on its own
    assert "Discord answered 503 to the revocation" in caplog.text
    assert token not in caplog.text


async def test_signed_out_pages_ask_to_sign_in(dashboard) -> None:
    browser = dashboard.browser()
    page = await browser.client.get(f"/g/{ALPHA}/plugins")
    assert page.status_code == 401 and "Sign in with Discord first" in page.text
    assert "Sign in with Discord" in (await browser.client.get("/")).text
