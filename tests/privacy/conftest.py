"""Fixtures for the per-user data tests: a kernel with the notes plugin, and the CLI."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner

from gigi_core.cli import cli
from gigi_core.cli.common import CliState
from gigi_core.testing import open_test_kernel
from tests.privacy.plugins import (
    MEMBER,
    USER,
    Notes,
    req,
    result_of,
    usage,
)


@pytest.fixture
async def env(database_url, tmp_path):
    """notes enabled in g1 and g2; the openai provider so a personal key can be sealed."""
    notes = Notes(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=["openai"], extra_plugins=[("notes", notes)], database_url=database_url
    ) as kernel:
        for guild in ("g1", "g2"):
            await kernel.enable_plugin(guild, "notes", by="boss")
        yield kernel, notes


@pytest.fixture
def gigi(database_url, tmp_path, monkeypatch):
    """The CLI on the same database a seeded kernel wrote (no plugins but the natives)."""
    monkeypatch.setenv("GIGI_DATABASE_URL", database_url)
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "")
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(cli, list(args), obj=CliState(), input=stdin)

    async def seeded() -> None:
        async with open_test_kernel(tmp_path, plugins=[], database_url=database_url) as kernel:
            for guild in ("g1", "g2"):
                await kernel.add_grant(guild, "gigi.channel.manage", "user", USER)
                await usage(kernel, USER, guild, 5)
                result_of(await kernel.agent.direct(req(MEMBER, guild), "gigi.privacy.info", {}))

    asyncio.run(seeded())
    return invoke
