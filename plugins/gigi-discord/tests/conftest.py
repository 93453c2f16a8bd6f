"""Fixtures for the Discord tests; the simulated server itself is ``discord_world``."""

from __future__ import annotations

import pathlib

import pytest

from gigi_core.testing.backends import database_url, postgres_server  # noqa: F401


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """No test sees the developer's Gigi settings, token or data folder."""
    for var in (
        "GIGI_DATABASE_URL",
        "GIGI_SECRET_KEY",
        "GIGI_LOAD_PLUGINS",
        "GIGI_BLOCK_PLUGINS",
        "GIGI_STRICT_PLUGINS",
        "GIGI_DISCORD_TOKEN",
        "GIGI_DISCORD_SHARD_IDS",
        "GIGI_DISCORD_SHARD_COUNT",
        "GIGI_DISCORD_MESSAGE_CONTENT",
        "GIGI_DISCORD_MEMBERS",
        "GIGI_DISCORD_SYNC",
        "GIGI_DISCORD_SYNC_GUILDS",
        "GIGI_TENANT_FALLBACK",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
