"""The dashboard under test: a real kernel, the app in process (httpx ASGI transport), and
a fake Discord on loopback that the app reaches through its real HTTP client."""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn
from gigi_web.fake_discord import MANAGE_GUILD, VIEW_CHANNEL, FakeDiscord, FakeGuild, FakeMember
from gigi_web.settings import WebSettings

BASE = "http://dash.test"
ADMIN, MEMBER, OUTSIDER = "1001", "1002", "1003"
ALPHA, BETA, NO_BOT = "9001", "9002", "9003"
EVIL_CHANNEL = "<script>alert('chan')</script>"
EVIL_ROLE = "<img src=x onerror=alert('role')>"
EVIL_GUILD = "Beta <b onmouseover=alert('guild')>club</b>"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoopbackServer:
    """An ASGI app served by uvicorn on 127.0.0.1 in a thread of its own."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def make_fake() -> FakeDiscord:
    fake = FakeDiscord("client-1", "client-secret-1", "bot-token-1")
    fake.add_user(ADMIN, "ada <i>admin</i>")
    fake.add_user(MEMBER, "bob")
    fake.add_user(OUTSIDER, "cy")
    fake.add_guild(
        FakeGuild(
            id=ALPHA,
            name="Alpha",
            roles={"7001": "Mods", "7002": EVIL_ROLE},
            channels={"8001": EVIL_CHANNEL},
            members={
                ADMIN: FakeMember(permissions=MANAGE_GUILD | VIEW_CHANNEL),
                MEMBER: FakeMember(roles=["7002"]),
            },
        )
    )
    fake.add_guild(
        FakeGuild(
            id=BETA,
            name=EVIL_GUILD,
            members={ADMIN: FakeMember(), MEMBER: FakeMember(permissions=MANAGE_GUILD)},
        )
    )
    fake.add_guild(
        FakeGuild(id=NO_BOT, name="No bot", bot=False, members={ADMIN: FakeMember(owner=True)})
    )
    return fake


def settings_for(discord_url: str, **overrides: Any) -> WebSettings:
    values: dict[str, Any] = {
        "base_url": BASE,
        "client_id": "client-1",
        "client_secret": "client-secret-1",
        "bot_token": "bot-token-1",
        "discord_api": f"{discord_url}/api",
        "authorize_url": f"{discord_url}/oauth2/authorize",
        "member_ttl": 0.0,  # every request asks Discord afresh unless a test says otherwise
    }
    values.update(overrides)
    return WebSettings(**values)


CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Browser:
    """One browser's cookie jar against the dashboard, with form helpers."""

    client: httpx.AsyncClient
    fake: FakeDiscord

    async def sign_in(self, user_id: str) -> httpx.Response:
        start = await self.client.get("/signin")
        assert start.status_code == 303, start.text
        self.fake.next_user = user_id
        async with httpx.AsyncClient() as discord:  # the browser's visit to Discord
            approved = await discord.get(start.headers["location"])
        assert approved.status_code == 302, approved.text
        back = urlsplit(approved.headers["location"])
        return await self.client.get(f"{back.path}?{back.query}")

    async def csrf(self, path: str = "/servers") -> str:
        page = await self.client.get(path)
        found = CSRF.search(page.text)
        assert found, f"no CSRF field on {path}: {page.status_code}"
        return found.group(1)

    async def post(
        self, path: str, data: dict[str, str], *, csrf: str | None = None, origin: str = BASE
    ) -> httpx.Response:
        token = csrf if csrf is not None else await self.csrf()
        return await self.client.post(
            path, data={"csrf": token, **data}, headers={"Origin": origin}
        )
