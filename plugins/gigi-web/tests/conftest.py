"""Fixtures for the dashboard tests: both store backends, a fake Discord on loopback, the
app in process, and browsers (cookie jars) signing in as the fake Discord's users."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from gigi_web.app import create_app
from gigi_web.fake_discord import FakeDiscord
from web_world import BASE, Browser, LoopbackServer, make_fake, settings_for
from webnotes_plugin import WebNotes

from gigi_core.testing import open_test_kernel
from gigi_core.testing.backends import database_url, isolated_env, postgres_server  # noqa: F401


@pytest.fixture
def fake_discord() -> Iterator[tuple[FakeDiscord, str]]:
    fake = make_fake()
    with LoopbackServer(fake.app()) as server:
        yield fake, server.url


@dataclass
class Dashboard:
    kernel: Any
    fake: FakeDiscord
    app: Any
    browser: Callable[[], Browser]


@pytest.fixture
async def dashboard(
    database_url: str,  # noqa: F811
    tmp_path: Path,
    fake_discord: tuple[FakeDiscord, str],
    request: pytest.FixtureRequest,
) -> AsyncIterator[Dashboard]:
    fake, url = fake_discord
    overrides = dict(getattr(request, "param", {}))
    plugins = ["web", "openai", *overrides.pop("plugins", [])]  # e.g. {"plugins": ["memory"]}
    async with open_test_kernel(
        tmp_path, plugins=plugins, extra_plugins=[("webnotes", WebNotes(tmp_path))],
        database_url=database_url,
    ) as kernel:  # fmt: skip
        app = create_app(kernel, settings_for(url, **overrides))
        clients: list[httpx.AsyncClient] = []

        def browser() -> Browser:
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)
            clients.append(client)
            return Browser(client, fake)

        yield Dashboard(kernel, fake, app, browser)
        for client in clients:
            await client.aclose()
