"""`gigi web` arrives through register_commands; its settings refuse what cannot work and
say what to set; `--dev` signs in through the built-in fake Discord."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys

import click
import httpx
import pytest
import uvicorn
from click.testing import CliRunner
from gigi_web.app import dev_app
from gigi_web.settings import WebSettings
from web_world import free_port

from gigi_core import ConfigError
from gigi_core.testing import load_test_plugins, open_test_kernel


def test_the_plugin_adds_gigi_web() -> None:
    loaded = load_test_plugins(["web"])
    assert loaded.registry.records["web"].status == "ok"
    group = click.Group("gigi")
    loaded.pm.hook.register_commands(cli=group)
    assert "web" in group.commands
    result = CliRunner().invoke(group, ["web", "--help"])
    assert result.exit_code == 0, result.output
    for option in ("--host", "--port", "--base-url", "--dev"):
        assert option in result.output


def test_settings_name_what_to_set(monkeypatch) -> None:
    with pytest.raises(ConfigError, match="GIGI_WEB_CLIENT_ID, GIGI_WEB_CLIENT_SECRET"):
        WebSettings.from_env("https://gigi.example.org")
    with pytest.raises(ConfigError, match="--base-url"):
        WebSettings.from_env("gigi.example.org", dev=True)
    monkeypatch.setenv("GIGI_WEB_RATE_PER_MINUTE", "fast")
    with pytest.raises(ConfigError, match="GIGI_WEB_RATE_PER_MINUTE must be a number"):
        WebSettings.from_env("http://127.0.0.1:8080", dev=True)
    monkeypatch.delenv("GIGI_WEB_RATE_PER_MINUTE")
    for name, value in (
        ("GIGI_WEB_CLIENT_ID", "1"), ("GIGI_WEB_CLIENT_SECRET", "s"), ("GIGI_DISCORD_TOKEN", "t"),
    ):  # fmt: skip
        monkeypatch.setenv(name, value)
    settings = WebSettings.from_env("https://gigi.example.org/")
    assert (
        settings.secure_cookies
        and settings.redirect_uri == "https://gigi.example.org/auth/callback"
    )
    assert settings.session_recheck_seconds == 5.0
    monkeypatch.setenv("GIGI_WEB_SESSION_RECHECK_SECONDS", "0.5")
    assert WebSettings.from_env("https://gigi.example.org").session_recheck_seconds == 0.5
    monkeypatch.setenv("GIGI_WEB_SESSION_RECHECK_SECONDS", "soon")
    with pytest.raises(ConfigError, match="GIGI_WEB_SESSION_RECHECK_SECONDS must be a number"):
        WebSettings.from_env("https://gigi.example.org")


def test_the_cli_refuses_to_start_without_discord_settings(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIGI_")}
    env.update(GIGI_HOME=str(tmp_path), GIGI_LOAD_PLUGINS="web")
    result = subprocess.run(
        [sys.executable, "-c", "from gigi_core.cli import main; main()", "web", "--port", "8999"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode != 0
    assert "GIGI_WEB_CLIENT_ID" in result.stderr and "gigi web --dev" in result.stderr


async def test_dev_mode_signs_in_with_the_built_in_fake(tmp_path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    settings = WebSettings.from_env(base, dev=True)
    async with open_test_kernel(tmp_path, plugins=["web"]) as kernel:
        server = uvicorn.Server(
            uvicorn.Config(
                dev_app(kernel, settings), host="127.0.0.1", port=port, log_level="warning"
            )
        )
        serving = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
            await asyncio.sleep(0.01)
        try:
            async with httpx.AsyncClient(base_url=base, follow_redirects=True) as browser:
                page = await browser.get("/signin")
                assert "Fake Discord sign-in" in page.text
                link = re.search(r'href="(approve\?[^"]+)"', page.text)  # the first: the admin
                assert link is not None
                target = link.group(1).replace("&amp;", "&")
                servers = await browser.get(f"/_dev/discord/oauth2/{target}")
                assert "Your servers" in servers.text and "Dev Server" in servers.text
                assert "local try-out" in servers.text
        finally:
            server.should_exit = True
            await serving
