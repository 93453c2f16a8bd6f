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
isolated_env = backends.isolated_env  # autouse


@pytest.fixture(autouse=True)
def _fast_retries(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    request.getfixturevalue("isolated_env")  # first, or it would remove this variable
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
