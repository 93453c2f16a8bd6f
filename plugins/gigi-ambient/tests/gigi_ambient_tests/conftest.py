"""Fixtures: both store backends, and a kernel with ambient and the real OpenAI provider
talking to the wire-level fake server, a recording poster and recorded backoff waits."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gigi_ambient_tests.ambient_helpers import World, open_world
from gigi_core.testing import backends
from gigi_core.testing.backends import isolated_env  # noqa: F401  (autouse)

database_url = backends.database_url
postgres_server = backends.postgres_server


@pytest.fixture
async def world(tmp_path: pathlib.Path) -> AsyncIterator[World]:
    """SQLite only: for behaviour that stores nothing (the history lives in memory)."""
    async with open_world(tmp_path, None) as w:
        yield w


@pytest.fixture
async def stored_world(tmp_path: pathlib.Path, database_url: str) -> AsyncIterator[Any]:
    """Both backends: for what the plugin stores (channels, counters)."""
    async with open_world(tmp_path, database_url) as w:
        yield w
