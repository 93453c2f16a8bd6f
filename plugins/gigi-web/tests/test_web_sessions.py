"""Visitors without a session cost nothing kept, an anonymous flood never signs anyone out,
and numbers in query strings and forms take ASCII digits within a bound, else a 400."""

from __future__ import annotations

import httpx
import pytest
from web_world import ADMIN, ALPHA, BASE

FLOOD = {"max_anonymous_sessions": 20, "max_sessions": 20, "rate_burst": 100_000.0}


@pytest.mark.parametrize("dashboard", [FLOOD], indirect=True)
async def test_an_anonymous_flood_leaves_signed_in_admins_signed_in(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    flood = httpx.AsyncClient(transport=httpx.ASGITransport(app=dashboard.app), base_url=BASE)
    async with flood:
        for _ in range(300):  # a page that only offers "sign in" keeps nothing
            flood.cookies.clear()
            home = await flood.get("/")
            assert home.status_code == 200 and "set-cookie" not in home.headers
        for _ in range(100):  # sign-ins started: five times the anonymous cap
            flood.cookies.clear()
            started = await flood.get("/signin")
            assert started.status_code == 303 and "set-cookie" in started.headers
    servers = await ada.client.get("/servers")
    assert servers.status_code == 200 and f"/g/{ALPHA}" in servers.text
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 200
    # The newest sign-ins in flight are kept: a visitor arriving now still signs in.
    late = dashboard.browser()
    assert (await late.sign_in(ADMIN)).headers["location"] == "/servers"


async def test_a_visitor_without_a_session_cannot_post_a_form(dashboard) -> None:
    visitor = dashboard.browser()
    page = await visitor.client.get("/")
    assert "set-cookie" not in page.headers
    refused = await visitor.client.post("/signout", data={"csrf": ""}, headers={"Origin": BASE})
    assert refused.status_code == 403 and "Reload the page" in refused.text


async def test_sign_out_clears_the_cookie(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    out = await ada.post("/signout", {})
    assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 401


async def test_query_numbers_take_ascii_digits_within_a_bound(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    for bad in ("²", "٣", "-1", "0", "1e3", "9" * 30):
        page = await ada.client.get(f"/g/{ALPHA}/audit", params={"before": bad})
        assert page.status_code == 400 and "before parameter" in page.text, bad
    assert (await ada.client.get(f"/g/{ALPHA}/audit", params={"before": "12"})).status_code == 200
    for bad in ("²", "٣٠", "31", "x"):
        page = await ada.client.get(f"/g/{ALPHA}/usage", params={"days": bad})
        assert page.status_code == 400 and "days parameter" in page.text, bad
    assert (await ada.client.get(f"/g/{ALPHA}/usage", params={"days": "7"})).status_code == 200


async def test_form_numbers_take_ascii_digits(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    hour = await ada.post(
        f"/g/{ALPHA}/budgets/set",
        {"scope_kind": "guild", "window": "daily", "limit": "5", "reset_hour": "²"},
    )
    assert hour.status_code == 400 and "Reset hour" in hour.text
    assert not await dashboard.kernel.llm.budget_status(ALPHA)
    grant = await ada.post(
        f"/g/{ALPHA}/grants/add", {"capability": "audit.read", "kind": "user", "user": "²³"}
    )
    assert grant.status_code == 400 and "user id" in grant.text
