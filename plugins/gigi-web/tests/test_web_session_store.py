"""Sessions live in the store (both backends): they survive a restart, two dashboards on one
database share them, a row holds no session id and no plaintext token, expired rows go,
and a page load costs at most one read of the session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from gigi_web.app import create_app
from gigi_web.sessions import hash_id, sweep_expired
from gigi_web.tables import sessions as table
from itsdangerous import URLSafeSerializer
from web_world import ADMIN, ALPHA, BASE, Browser, settings_for
from webnotes_plugin import WebNotes

from gigi_core.testing import open_test_kernel

KEY = "mY7M1K7iYIdMZNR7W4sfYWcBApbeqxE10GC5GoZGvVU"  # one operator key for every process


@asynccontextmanager
async def dashboard_on(
    database_url: str, home: Path, discord: str, **overrides: Any
) -> AsyncIterator[tuple[Any, Any]]:
    """One dashboard process: its own kernel and app on the shared database and key."""
    async with open_test_kernel(
        home, plugins=["web", "openai"], extra_plugins=[("webnotes", WebNotes(home))],
        database_url=database_url, secret_key=KEY,
    ) as kernel:  # fmt: skip
        yield kernel, create_app(kernel, settings_for(discord, **overrides))


def browser_of(app: Any, fake: Any) -> Browser:
    return Browser(httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE), fake)


async def rows(kernel: Any) -> list[Any]:
    async with kernel.db.engine.connect() as conn:
        return list(await conn.execute(sa.select(table)))


def sid_of(cookie: str) -> str:
    """The raw session id inside a cookie (what only the browser holds)."""
    _, sid = URLSafeSerializer("unused", salt="gigi-web-session").loads_unsafe(cookie)
    assert isinstance(sid, str) and len(sid) >= 40
    return sid


async def test_a_signed_in_session_survives_a_restart(database_url, tmp_path, fake_discord) -> None:
    fake, discord = fake_discord
    async with dashboard_on(database_url, tmp_path, discord) as (_, app):
        ada = browser_of(app, fake)
        async with ada.client:
            await ada.sign_in(ADMIN)
            cookie = ada.client.cookies["gigi_session"]
            assert (await ada.client.get("/servers")).status_code == 200
    # A new kernel and app on the same database: the same cookie still works.
    async with dashboard_on(database_url, tmp_path, discord) as (_, app):
        again = browser_of(app, fake)
        async with again.client:
            again.client.cookies.set("gigi_session", cookie)
            servers = await again.client.get("/servers")
            assert servers.status_code == 200 and "Signed in as ada" in servers.text
            assert (await again.client.get(f"/g/{ALPHA}/plugins")).status_code == 200


async def test_two_dashboards_share_a_session_and_its_sign_out(
    database_url, tmp_path, fake_discord
) -> None:
    fake, discord = fake_discord
    bound = 0.5
    async with (
        dashboard_on(database_url, tmp_path, discord, session_recheck_seconds=bound) as (_, one),
        dashboard_on(database_url, tmp_path, discord, session_recheck_seconds=bound) as (_, two),
    ):
        on_one, on_two = browser_of(one, fake), browser_of(two, fake)
        async with on_one.client, on_two.client:
            await on_one.sign_in(ADMIN)
            on_two.client.cookies.set("gigi_session", on_one.client.cookies["gigi_session"])
            assert (await on_two.client.get(f"/g/{ALPHA}/plugins")).status_code == 200
            assert (await on_one.client.get(f"/g/{ALPHA}/plugins")).status_code == 200
            # The CSRF token is the session's, whichever process renders the form.
            assert await on_one.csrf() == await on_two.csrf()
            out = await on_two.post("/signout", {})
            assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
            await asyncio.sleep(bound + 0.1)  # the other process re-reads within the bound
            assert (await on_one.client.get(f"/g/{ALPHA}/plugins")).status_code == 401
            assert (await on_one.client.get("/servers")).headers["location"] == "/"


async def test_a_row_holds_no_session_id_and_no_plaintext_token(dashboard) -> None:
    ada = dashboard.browser()
    start = await ada.client.get("/signin")
    state = parse_qs(urlsplit(start.headers["location"]).query)["state"][0]
    anonymous = sid_of(ada.client.cookies["gigi_session"])
    (pending,) = await rows(dashboard.kernel)
    assert pending.id_hash == hash_id(anonymous) and not pending.signed_in
    assert pending.pending_sealed and pending.pending_expires
    assert state.encode() not in repr(tuple(pending)).encode()
    assert anonymous not in repr(tuple(pending))

    dashboard.fake.next_user = ADMIN
    async with httpx.AsyncClient() as discord:
        approved = await discord.get(start.headers["location"])
    back = urlsplit(approved.headers["location"])
    assert (await ada.client.get(f"{back.path}?{back.query}")).status_code == 303
    sid = sid_of(ada.client.cookies["gigi_session"])
    assert sid != anonymous
    (token,) = dashboard.fake.tokens  # the access token Discord issued
    (row,) = await rows(dashboard.kernel)  # the anonymous row went with the rotation
    assert row.id_hash == hash_id(sid) and row.signed_in and row.user_id == ADMIN
    assert row.token_sealed and row.pending_sealed is None
    for value in tuple(row):
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        assert sid not in text and anonymous not in text and token not in text
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 200


async def test_sign_out_deletes_the_row(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    assert len(await rows(dashboard.kernel)) == 1
    assert (await ada.post("/signout", {})).status_code == 303
    assert await rows(dashboard.kernel) == []


@pytest.mark.parametrize("dashboard", [{"session_recheck_seconds": 0.0}], indirect=True)
async def test_an_expired_session_is_refused_and_its_row_removed(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 200
    async with dashboard.kernel.db.engine.begin() as conn:
        await conn.execute(sa.update(table).values(expires=1.0))  # long past
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 401
    assert await rows(dashboard.kernel) == []


async def test_expired_rows_are_swept_by_the_job_and_each_process(dashboard) -> None:
    assert "web.sessions_sweep" in dashboard.kernel.registry.jobs
    for _ in range(2):
        await dashboard.browser().client.get("/signin")  # a sign-in in flight each
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    engine = dashboard.kernel.db.engine
    async with engine.begin() as conn:
        await conn.execute(sa.update(table).where(~table.c.signed_in).values(expires=1.0))
    assert await sweep_expired(engine) == 2
    assert [r.user_id for r in await rows(dashboard.kernel)] == [ADMIN]
    async with engine.begin() as conn:
        await conn.execute(sa.update(table).values(expires=1.0))
    assert await dashboard.app.state.sessions.sweep() == 1
    assert await rows(dashboard.kernel) == []


@pytest.mark.parametrize(
    "dashboard", [{"max_anonymous_sessions": 5, "rate_burst": 100_000.0}], indirect=True
)
async def test_the_anonymous_cap_holds_in_the_store(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    for _ in range(15):
        await dashboard.browser().client.get("/signin")
    kept = await rows(dashboard.kernel)
    assert sum(not r.signed_in for r in kept) == 5
    assert [r.user_id for r in kept if r.signed_in] == [ADMIN]


class Reads:
    """Statements on the sessions table, counted at the driver."""

    def __init__(self, engine: Any) -> None:
        self.statements: list[str] = []
        sa.event.listen(engine.sync_engine, "before_cursor_execute", self.seen)

    def seen(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "web_sessions" in statement:
            self.statements.append(statement)


@pytest.mark.parametrize("dashboard", [{"session_recheck_seconds": 0.0}], indirect=True)
async def test_a_page_load_reads_the_session_once_by_its_key(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    await ada.client.get("/servers")
    reads = Reads(dashboard.kernel.db.engine)
    assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 200
    (statement,) = reads.statements
    assert statement.lstrip().upper().startswith("SELECT") and "id_hash =" in statement


async def test_within_the_recheck_bound_a_page_load_reads_nothing(dashboard) -> None:
    ada = dashboard.browser()
    await ada.sign_in(ADMIN)
    reads = Reads(dashboard.kernel.db.engine)
    for _ in range(3):
        assert (await ada.client.get(f"/g/{ALPHA}/plugins")).status_code == 200
    assert reads.statements == []


async def test_a_process_without_the_key_does_not_open_the_token(
    database_url, tmp_path, fake_discord
) -> None:
    """A dashboard with another secret key cannot use a stored token: it asks for sign-in."""
    fake, discord = fake_discord
    async with dashboard_on(database_url, tmp_path, discord, session_key="shared") as (_, app):
        ada = browser_of(app, fake)
        async with ada.client:
            await ada.sign_in(ADMIN)
            cookie = ada.client.cookies["gigi_session"]
    async with open_test_kernel(
        tmp_path, plugins=["web", "openai"], database_url=database_url
    ) as kernel:  # a random key of its own
        other = browser_of(create_app(kernel, settings_for(discord, session_key="shared")), fake)
        async with other.client:
            other.client.cookies.set("gigi_session", cookie)
            assert (await other.client.get(f"/g/{ALPHA}/plugins")).status_code == 401
        assert len(await rows(kernel)) == 1  # not deleted: that process lacks the key
