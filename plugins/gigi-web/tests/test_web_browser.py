"""A real browser (Chromium from the OS packages, driven by Playwright) through the whole
dashboard: sign in with the fake Discord, pick a server, enable a plugin, fix a settings
form, add a grant, open the budgets, read the audit log and a usage plot, export and
delete "my data".

Skips only when Chromium (or Playwright) is missing outside CI; in CI (CI=true) it fails.
Set DASHBOARD_SCREENSHOTS=docs/web to refresh the documentation's screenshots.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from gigi_web.app import create_app
from gigi_web.fake_discord import FakeDiscord
from web_world import ADMIN, ALPHA, BETA, LoopbackServer, free_port, make_fake, settings_for
from webnotes_plugin import WebNotes

from gigi_core.llm.usage import UsageLog, UsageRecord
from gigi_core.testing import open_test_kernel

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
]  # fmt: skip


def chromium() -> str:
    """The OS's Chromium, or skip (fail in CI: there it must be installed)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        message = (
            "Chromium or Playwright is missing: apt-get install chromium; pip install playwright"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def _friendly(fake) -> None:
    """Plain names for the screenshots (the attack tests use hostile ones)."""
    fake.users[ADMIN] = "ada"
    fake.guilds[BETA].name = "Book Club"
    fake.guilds[ALPHA].roles = {"7001": "Moderators", "7002": "Members"}
    fake.guilds[ALPHA].channels = {"8001": "general"}


async def _usage(kernel) -> None:
    log = UsageLog(kernel.db)
    now = datetime.now(UTC)
    n = 0
    for day in range(14):
        for model, calls in (("gpt-small", 3 + day % 4), ("claude-mid", 1 + day % 3)):
            for _ in range(calls):
                n += 1
                await log.record(
                    UsageRecord(
                        request_id=f"r{n}", provider="openai", model=model, purpose="chat",
                        billing_owner_type="guild", billing_owner_id=ALPHA, status="ok",
                        guild_id=ALPHA, input_tokens=900, output_tokens=120,
                        created_at=now - timedelta(days=day),
                    )
                )  # fmt: skip


def _shots_folder(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("DASHBOARD_SCREENSHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Walk:
    """A signed-out Chromium tab on the dashboard, served by uvicorn on loopback in front of
    a real kernel, with the fake Discord's world (plain names) and where shots go."""

    kernel: Any
    fake: FakeDiscord
    page: Any  # playwright.async_api.Page
    base: str
    shots: Path

    async def shot(self, name: str, *, full_page: bool = False) -> None:
        await self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=full_page)

    async def sign_in(self) -> None:
        """Sign in as ada through the fake Discord; lands on the server list."""
        from playwright.async_api import expect

        await self.page.goto(self.base)
        await self.page.get_by_role("link", name="Sign in with Discord").click()
        await self.page.get_by_role("link", name="Authorize as ada").click()
        await expect(self.page.get_by_role("heading", name="Your servers")).to_be_visible()


@asynccontextmanager
async def browsing(
    database_url: str, tmp_path: Path, plugins: Sequence[str] = ()
) -> AsyncIterator[Walk]:
    """The dashboard (its kernel loading web, openai, webnotes and ``plugins``) in Chromium.

    Shots go to $DASHBOARD_SCREENSHOTS (docs/web refreshes the documentation's) or tmp_path.
    """
    executable = chromium()
    from playwright.async_api import async_playwright

    shots = _shots_folder(tmp_path)
    fake = make_fake()
    _friendly(fake)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with LoopbackServer(fake.app()) as discord:
        async with open_test_kernel(
            tmp_path, plugins=["web", "openai", *plugins],
            extra_plugins=[("webnotes", WebNotes(tmp_path, hostile=False))],
            database_url=database_url,
        ) as kernel:  # fmt: skip
            settings = settings_for(discord.url, base_url=base, member_ttl=5.0)
            app = create_app(kernel, settings)
            server = uvicorn.Server(
                uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
            )
            serving = asyncio.create_task(server.serve())
            while not server.started:  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
                await asyncio.sleep(0.01)
            try:
                async with async_playwright() as pw:
                    browser = await pw.chromium.launch(
                        executable_path=executable, args=CHROMIUM_ARGS
                    )
                    page = await browser.new_page(
                        viewport={"width": 1000, "height": 720}, accept_downloads=True
                    )
                    yield Walk(kernel, fake, page, base, shots)
                    await browser.close()
            finally:
                server.should_exit = True
                await serving


async def test_the_dashboard_in_a_real_browser(database_url, tmp_path: Path) -> None:
    from playwright.async_api import expect

    async with browsing(database_url, tmp_path) as walk:
        kernel, page, shot = walk.kernel, walk.page, walk.shot
        await _usage(kernel)
        await walk.sign_in()
        await shot("servers")

        await page.get_by_role("link", name="Alpha").click()
        await expect(page.get_by_role("heading", name="Plugins")).to_be_visible()
        await page.get_by_role("link", name="Review and enable webnotes").click()
        await expect(page.get_by_text("webnotes.wipe")).to_be_visible()
        await shot("enable")
        await page.get_by_role("button", name="Enable webnotes in Alpha").click()
        await expect(page.get_by_text("Enabled webnotes.")).to_be_visible()
        await shot("plugins")
        assert "webnotes" in await kernel.plugin_state.enabled_plugins(ALPHA)

        await page.get_by_role("link", name="Settings of webnotes").click()
        await page.get_by_label("Units").fill("99")
        await page.get_by_label("API key").fill("sk-browser-secret-1")
        await page.get_by_role("button", name="Save settings").click()
        await expect(page.locator("#e-units")).to_contain_text("maximum")
        assert await page.get_by_label("Units").get_attribute("aria-invalid") == "true"
        await shot("config-error")
        await page.get_by_label("Units").fill("3")
        await page.get_by_label("API key").fill("sk-browser-secret-1")
        await page.get_by_role("button", name="Save settings").click()
        await expect(page.get_by_text("Settings saved.")).to_be_visible()
        assert "sk-browser-secret-1" not in await page.content()
        config = await kernel.plugin_config(ALPHA, "webnotes")
        assert config["units"] == 3 and config["api_key"] == "sk-browser-secret-1"

        await page.get_by_role("link", name="Grants").click()
        await page.get_by_label("Capability").select_option("audit.read")
        await page.get_by_label("Role", exact=True).select_option(label="Moderators")
        await page.get_by_role("button", name="Add grant").click()
        await expect(page.get_by_text("Granted audit.read.")).to_be_visible()
        await shot("grants")
        grants = await kernel.grants.list(ALPHA)
        assert [(g.capability, g.subject_id) for g in grants] == [("audit.read", "7001")]

        await page.get_by_role("link", name="Channels").click()
        await page.get_by_label("New state of #general").select_option("paused")
        await page.get_by_role("button", name="Set").click()
        await expect(page.get_by_text("The channel is paused now.")).to_be_visible()
        assert await kernel.channels.get(ALPHA, "8001") == "paused"
        await shot("channels")

        await page.get_by_role("link", name="LLM").click()
        await page.get_by_label("Label").fill("main")
        await page.get_by_label("API key").fill("sk-browser-llm-key-1")
        await page.get_by_role("button", name="Add key").click()
        await expect(page.get_by_text("Stored the key main")).to_be_visible()
        assert "sk-browser-llm-key-1" not in await page.content()
        await page.get_by_label("Model id").fill("gpt-4o-mini")
        await page.get_by_role("button", name="Use this model").click()
        await expect(page.get_by_text("The chat purpose uses gpt-4o-mini now.")).to_be_visible()
        await shot("llm")

        await page.get_by_role("link", name="Budgets").click()
        await expect(page.get_by_role("heading", name="Model budgets")).to_be_visible()
        await expect(page.get_by_text("No budgets: calls here are not limited.")).to_be_visible()

        await page.get_by_role("link", name="Audit log").click()
        await expect(page.get_by_role("cell", name="grant.add")).to_be_visible()
        await expect(page.get_by_role("cell", name="plugin.config")).to_be_visible()
        await shot("audit")

        await page.get_by_role("link", name="Usage").click()
        chart = page.locator("svg.chart")
        await expect(chart).to_be_visible()
        assert await chart.locator("rect").count() >= 20
        await expect(page.get_by_role("rowheader", name="gpt-small")).to_be_visible()
        await shot("usage")

        await page.get_by_role("link", name="My data").click()
        async with page.expect_download() as waiting:
            await page.get_by_role("link", name="Export my data (JSON file)").click()
        download = await waiting.value
        saved = tmp_path / "export.json"
        await download.save_as(saved)
        exported = json.loads(saved.read_text())
        assert exported["user_id"] == ADMIN and exported["guild_id"] == ALPHA
        await shot("mydata")
        await page.get_by_role("link", name="Delete my data in this server…").click()
        await page.get_by_role("button", name="Delete my data").click()
        await expect(page.get_by_role("alert")).to_contain_text("Type the word")
        await page.get_by_label("Type delete to confirm").fill("delete")
        await page.get_by_role("button", name="Delete my data").click()
        await expect(page.get_by_text("Deleted")).to_be_visible()

        await page.get_by_role("button", name="Sign out").click()
        await expect(page.get_by_role("link", name="Sign in with Discord")).to_be_visible()


def test_a_missing_chromium_skips_locally_and_fails_in_ci(monkeypatch) -> None:
    import test_web_browser as me

    monkeypatch.setattr(me.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        me.chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium"):
        me.chromium()
