"""Fixtures: both store backends (gigi_core.testing.backends) and a kernel with the
knowledge plugin enabled in g1 and the keyless scripted model (knowledge_fakes)."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gigi_core.testing import backends, open_test_kernel

database_url = backends.database_url
postgres_server = backends.postgres_server


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    for var in ("GIGI_DATABASE_URL", "GIGI_SECRET_KEY", "GIGI_LOAD_PLUGINS", "GIGI_BLOCK_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    for var in list(__import__("os").environ):
        if var.startswith("GIGI_KNOWLEDGE_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIGI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIGI_JOBS_RETRY_BASE_SECONDS", "0")


@pytest.fixture
async def fake() -> Any:
    from knowledge_fakes import KnowledgeFakePlugin

    return KnowledgeFakePlugin()


@pytest.fixture
async def kernel(database_url: str, tmp_path: pathlib.Path, fake: Any) -> AsyncIterator[Any]:
    async with open_test_kernel(
        tmp_path, plugins=["knowledge"], extra_plugins=[("kfake", fake)], database_url=database_url
    ) as k:
        await k.enable_plugin("g1", "knowledge")
        yield k


@pytest.fixture
def model(fake: Any) -> Any:
    return fake.provider
