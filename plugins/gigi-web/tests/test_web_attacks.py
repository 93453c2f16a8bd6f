"""Attacks on the dashboard, one test each: the policy engine and the guards must hold."""

from __future__ import annotations

import asyncio
import logging
import time
from urllib.parse import urlsplit

import httpx
import pytest
from gigi_web.app import template_env
from gigi_web.fake_discord import MANAGE_GUILD
from starlette.routing import Route
from web_world import (
    ADMIN,
    ALPHA,
    BASE,
    BETA,
    EVIL_CHANNEL,
    EVIL_GUILD,
    EVIL_ROLE,
    MEMBER,
    NO_BOT,
)  # fmt: skip

from gigi_core import AuditFilter, query_audit

ADMIN_GETS = ["plugins", "plugins/webnotes/enable", "plugins/webnotes/config", "grants",
              "channels", "llm", "budgets", "runs", "jobs", "audit", "usage"]  # fmt: skip
ADMIN_POSTS = {
    "plugins/webnotes/enable": {},
    "plugins/webnotes/disable": {},
    "plugins/webnotes/config": {"units": "2"},
    "grants/add": {"capability": "*", "subject_type": "user", "user": MEMBER},
    "grants/remove": {"capability": "*", "subject_type": "user", "user": MEMBER},
    "channels/set": {"channel": "8001", "state": "paused"},
    "llm/credentials/add": {"provider": "openai", "label": "x", "api_key": "sk-xxxxxxxxxxxx"},
    "llm/credentials/revoke": {"label": "x"},
    "llm/profiles/set": {"purpose": "chat", "credential": "x", "model": "m"},
    "llm/profiles/remove": {"purpose": "chat"},
    "budgets/set": {"scope_kind": "guild", "window": "daily", "limit": "5"},
    "budgets/reset": {"scope_kind": "guild", "window": "daily"},
    "budgets/remove": {"scope_kind": "guild", "window": "daily"},
    "budgets/personal-keys": {"personal_keys": "guild-allowed"},
    "jobs/cancel": {"job": "0" * 32},
    "jobs/retry": {"job": "0" * 32},
}


async def test_a_member_without_manage_server_cannot_call_admin_endpoints(dashboard) -> None:
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    for page in ADMIN_GETS:
        refused = await bob.client.get(f"/g/{ALPHA}/{page}")
        assert refused.status_code == 403, page
        assert "can grant it" in refused.text  # says what to change
    for page, data in ADMIN_POSTS.items():
        assert (await bob.post(f"/g/{ALPHA}/{page}", data)).status_code == 403, page
    kernel = dashboard.kernel
    assert await kernel.grants.list(ALPHA) == []
    assert await kernel.plugin_state.get(ALPHA, "webnotes") is None
    assert await kernel.channels.states(ALPHA) == {}
    # A grant from an admin opens exactly the page it names, decided by the policy engine.
    await kernel.add_grant(ALPHA, "audit.read", "role", "7002", by=ADMIN)
    assert (await bob.client.get(f"/g/{ALPHA}/audit")).status_code == 200
    assert (await bob.client.get(f"/g/{ALPHA}/grants")).status_code == 403


async def test_permissions_are_checked_again_on_every_request(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 200
    dashboard.fake.guilds[ALPHA].members[ADMIN].permissions = 0  # demoted in Discord
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 403
    del dashboard.fake.guilds[ALPHA].members[ADMIN]  # left the server
    assert (await ada.client.get(f"/g/{ALPHA}/data")).status_code == 404


async def test_forged_replayed_and_foreign_state_are_refused(dashboard) -> None:
    fake = dashboard.fake
    ada = dashboard.browser()
    start = await ada.client.get("/signin")
    fake.next_user = ADMIN
    async with httpx.AsyncClient() as discord:
        approved = await discord.get(start.headers["location"])
    back = urlsplit(approved.headers["location"])
    forged = back.query.replace("state=", "state=x")
    refused = await ada.client.get(f"{back.path}?{forged}")
    assert refused.status_code == 400 and "Sign in again" in refused.text
    # The forged attempt used the pending sign-in up: the genuine callback is now a replay.
    replay = await ada.client.get(f"{back.path}?{back.query}")
    assert replay.status_code == 400 and "already used" in replay.text
    assert (await ada.client.get("/servers")).headers["location"] == "/"

    # A callback captured from one browser does not sign in another.
    eve = dashboard.browser()
    await eve.client.get("/signin")
    other = dashboard.browser()
    start = await other.client.get("/signin")
    async with httpx.AsyncClient() as discord:
        approved = await discord.get(start.headers["location"])
    back = urlsplit(approved.headers["location"])
    stolen = await eve.client.get(f"{back.path}?{back.query}")
    assert stolen.status_code == 400 and "does not belong to this browser" in stolen.text

    # A successful callback cannot be replayed either.
    done = await other.client.get(f"{back.path}?{back.query}")
    assert done.status_code == 303
    again = await other.client.get(f"{back.path}?{back.query}")
    assert again.status_code == 400


async def test_an_expired_state_is_refused(dashboard, monkeypatch) -> None:
    from gigi_web import oauth

    monkeypatch.setattr(oauth, "STATE_SECONDS", -1.0)
    ada = dashboard.browser()
    refused = await ada.sign_in(ADMIN)
    assert refused.status_code == 400 and "expired" in refused.text


async def test_csrf_from_another_origin_or_without_the_token_is_refused(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    data = {"capability": "*", "subject_type": "user", "user": MEMBER}
    cross = await ada.post(f"/g/{ALPHA}/grants/add", data, origin="https://evil.example")
    assert cross.status_code == 403 and "another site" in cross.text
    no_origin = await ada.client.post(
        f"/g/{ALPHA}/grants/add", data={"csrf": await ada.csrf(), **data}
    )
    assert no_origin.status_code == 403
    wrong = await ada.post(f"/g/{ALPHA}/grants/add", data, csrf="not-the-token")
    assert wrong.status_code == 403 and "Reload the page" in wrong.text
    # Another signed-in browser's token is not this session's.
    other = dashboard.browser()
    await other.sign_in(MEMBER)
    theirs = await other.csrf()
    assert (await ada.post(f"/g/{ALPHA}/grants/add", data, csrf=theirs)).status_code == 403
    assert await dashboard.kernel.grants.list(ALPHA) == []


def test_every_post_route_is_in_the_csrf_attack(dashboard) -> None:
    """A new POST route must join the attack below, so none can skip the token check."""
    posts = {
        r.path for r in dashboard.app.routes if isinstance(r, Route) and "POST" in (r.methods or ())
    }
    pages = {page.replace("webnotes", "{plugin}") for page in ADMIN_POSTS}
    attacked = {f"/g/{{guild_id:int}}/{page}" for page in pages} | {
        "/g/{guild_id:int}/data/delete",
        # attacked in test_web_memory, _memory_admin and _knowledge_admin (need the plugin)
        "/g/{guild_id:int}/memory/set",
        "/g/{guild_id:int}/memory/policy",
        "/g/{guild_id:int}/memory/purge",
        "/g/{guild_id:int}/memory/sync",  # in test_web_memory_sync
        "/g/{guild_id:int}/knowledge/set",
        "/g/{guild_id:int}/knowledge/action",  # these four: in test_web_knowledge_edit
        "/g/{guild_id:int}/knowledge/reassign",
        "/g/{guild_id:int}/knowledge/contradiction",
        "/g/{guild_id:int}/knowledge/context",
        "/signout",
    }
    assert posts == attacked


async def test_missing_csrf_is_refused_on_every_post_route(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    for page, data in {**ADMIN_POSTS, "data/delete": {"confirm": "delete"}}.items():
        refused = await ada.client.post(f"/g/{ALPHA}/{page}", data=data, headers={"Origin": BASE})
        assert refused.status_code == 403, page
    assert (await ada.client.post("/signout", headers={"Origin": BASE})).status_code == 403


async def test_a_session_is_no_key_to_another_guild(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)  # admin in Alpha, a plain member in Beta
    for page in ADMIN_GETS:
        assert (await ada.client.get(f"/g/{BETA}/{page}")).status_code == 403, page
    assert (await ada.client.get(f"/g/{NO_BOT}/plugins")).status_code == 404
    assert (await ada.client.get("/g/123456/plugins")).status_code == 404
    forged = await ada.post(
        f"/g/{BETA}/grants/add", {"capability": "*", "subject_type": "user", "user": ADMIN}
    )
    assert forged.status_code == 403 and await dashboard.kernel.grants.list(BETA) == []
    # bob manages Beta; his session opens Beta's pages but not Alpha's.
    bob = dashboard.browser()
    await bob.sign_in(MEMBER)
    assert (await bob.client.get(f"/g/{BETA}/plugins")).status_code == 200
    assert (await bob.client.get(f"/g/{ALPHA}/plugins")).status_code == 403


async def test_secrets_never_reach_a_page_the_log_or_the_audit(dashboard, caplog) -> None:
    secret = "sk-live-DO-NOT-SHOW-4242"
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    path = f"/g/{ALPHA}/plugins/webnotes/config"
    with caplog.at_level(logging.DEBUG):
        bad = await ada.post(path, {"units": "0", "api_key": secret})
        good = await ada.post(path, {"units": "5", "api_key": secret})
        shown = await ada.client.get(path)
        audit = await ada.client.get(f"/g/{ALPHA}/audit")
    assert good.status_code == 303
    for response in (bad, shown, audit):
        assert secret not in response.text
    assert secret not in caplog.text
    assert "client-secret-1" not in caplog.text and "bot-token-1" not in caplog.text
    rows = await query_audit(dashboard.kernel.db, AuditFilter(guild_id=ALPHA))
    assert secret not in repr(rows)


async def test_untrusted_text_is_escaped_everywhere(dashboard) -> None:
    assert template_env().autoescape is True
    await dashboard.kernel.set_channel_state(ALPHA, "8001", "paused", by=ADMIN)
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    pages = {
        "servers": await ada.client.get("/servers"),
        "plugins": await ada.client.get(f"/g/{ALPHA}/plugins"),
        "enable": await ada.client.get(f"/g/{ALPHA}/plugins/webnotes/enable"),
        "grants": await ada.client.get(f"/g/{ALPHA}/grants"),
        "audit": await ada.client.get(f"/g/{ALPHA}/audit"),
        "channels": await ada.client.get(f"/g/{ALPHA}/channels"),
        "data": await ada.client.get(f"/g/{BETA}/data"),
    }
    raw = ["<script>alert(", "<img src=x", "<b onmouseover", "<i>admin</i>"]
    for name, page in pages.items():
        for bad in raw:
            assert bad not in page.text, (name, bad)
    assert "&lt;script&gt;alert(" in pages["plugins"].text  # the description, escaped
    assert "&lt;img src=x onerror=alert(" in pages["enable"].text  # the data statement
    assert "&lt;img src=x" in pages["grants"].text  # a role name
    assert "#&lt;script&gt;" in pages["audit"].text  # a channel name
    assert "#&lt;script&gt;" in pages["channels"].text
    assert "&lt;b onmouseover" in pages["data"].text  # a server name
    assert "ada &lt;i&gt;admin&lt;/i&gt;" in pages["servers"].text  # a username
    assert EVIL_CHANNEL and EVIL_ROLE and EVIL_GUILD
    csp = pages["plugins"].headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_burst_of_10000_requests_is_rate_limited(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    statuses: dict[int, int] = {}

    async def one() -> None:
        response = await ada.client.get(f"/g/{ALPHA}/plugins")
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    started = time.monotonic()
    for _ in range(100):
        await asyncio.gather(*(one() for _ in range(100)))
    elapsed = time.monotonic() - started
    settings = dashboard.app.state.web.settings
    allowed = settings.rate_burst + settings.rate_per_minute * elapsed / 60 + 1
    assert sum(statuses.values()) == 10_000
    assert statuses.get(200, 0) <= allowed, (statuses, elapsed)
    assert set(statuses) <= {200, 429}
    limited = await ada.client.get("/servers")
    assert limited.status_code == 429 and limited.headers["retry-after"] == "60"
    # Without a cookie, a client address has a bucket of its own: no way around the limit.
    fresh = httpx.AsyncClient(transport=httpx.ASGITransport(app=dashboard.app), base_url=BASE)
    async with fresh:
        codes = [(await fresh.get("/")).status_code for _ in range(100)]
    assert codes.count(429) >= 30


async def test_a_body_over_the_limit_is_refused(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    big = await ada.post(f"/g/{ALPHA}/grants/add", {"capability": "x" * 100_000})
    assert big.status_code == 413


async def test_a_guild_admin_is_no_admin_where_the_bot_is_absent(dashboard) -> None:
    dashboard.fake.guilds[NO_BOT].members[ADMIN].permissions = MANAGE_GUILD
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    assert (await ada.client.get(f"/g/{NO_BOT}/audit")).status_code == 404
