"""Fixtures: both store backends (SQLite and embedded PostgreSQL), copied from the kernel's
tests/conftest.py (plugin tests do not see it), and kernels with memory enabled in g1."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gigi_core.testing import backends, open_test_kernel
from gigi_core.testing.backends import isolated_env  # noqa: F401  (autouse)

# Both store backends, the fixtures every plugin's tests share (gigi_core.testing.backends).
database_url = backends.database_url
postgres_server = backends.postgres_server


@pytest.fixture
async def kernel(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    """A kernel with the memory plugin (enabled in guild g1) and the real local embedder."""
    async with open_test_kernel(
        tmp_path, plugins=["memory", "local-embed"], database_url=database_url
    ) as k:
        await k.enable_plugin("g1", "memory")
        yield k


@pytest.fixture
async def flaky_kernel(
    database_url: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Any]:
    """Memory with a keyless test embedder that can be made to fail or change its model;
    job retries are immediate (run_until_idle runs them in the same call)."""
    from memory_embedder import FlakyEmbedderPlugin

    monkeypatch.setenv("GIGI_JOBS_RETRY_BASE_SECONDS", "0")
    async with open_test_kernel(
        tmp_path,
        plugins=["memory"],
        extra_plugins=[("flaky-embed", FlakyEmbedderPlugin())],
        database_url=database_url,
    ) as k:
        await k.enable_plugin("g1", "memory")
        yield k
