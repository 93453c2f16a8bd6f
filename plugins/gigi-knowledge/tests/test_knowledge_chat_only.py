"""A server with only a ``chat`` profile (issue 28, item 2): classification, which asks for
``classify`` then ``routing``, falls back to ``chat`` as every other slot does, so
knowledge works there; and ``/knowledge enable`` and ``status`` say plainly when no model
can serve it instead of claiming it is on and doing nothing."""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from knowledge_fakes import classify, decision, extraction
from knowledge_helpers import call, enable, message, publish, rows

from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep

KEY = "sk-guild-knowledge-chat-only"


async def _open(
    tmp_path: pathlib.Path, database_url: str, purposes: tuple[str, ...]
) -> AsyncIterator[tuple[Any, Any]]:
    async with (
        open_test_kernel(tmp_path, plugins=["knowledge", "openai"], database_url=database_url) as k,
        FakeOpenAI(api_key=KEY) as fake,
    ):
        for provider in k.registry.all_providers():
            provider._http = LlmHttpClient(
                retry=RetryPolicy(max_attempts=1), sleep=RecordingSleep()
            )
        await k.enable_plugin("g1", "knowledge")
        await k.llm.add_credential(
            "guild:g1", "openai-compatible", "main", KEY, base_url=fake.base_url
        )
        for purpose in purposes:
            await k.llm.set_profile("guild:g1", purpose, "main", f"m-{purpose}")
        yield k, fake


@pytest.fixture
async def chat_only(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[tuple[Any, Any]]:
    async for pair in _open(tmp_path, database_url, ("chat", "embedding")):
        yield pair


@pytest.fixture
async def no_model(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[tuple[Any, Any]]:
    async for pair in _open(tmp_path, database_url, ()):
        yield pair


async def test_classification_falls_back_to_the_chat_profile(chat_only: tuple[Any, Any]) -> None:
    kernel, fake = chat_only
    result = await enable(kernel)
    m = message("we agreed to freeze the schema until march")
    fake.reply_text(json.dumps(classify(confidence=0.95)))
    fake.reply_text(
        json.dumps(
            extraction(decisions=[decision("The schema is frozen until March", [m.message_id])])
        )
    )
    await publish(kernel, m)
    assert [r.json["model"] for r in fake.requests_to("chat")] == ["m-chat", "m-chat"]
    (d,) = await rows(kernel, "knowledge_decisions")
    assert d.summary == "The schema is frozen until March"
    # ... and enable and status say which model serves it.
    assert result["knowledge"] == "on" and "warning" not in result
    assert result["models"]["classify"].startswith("m-chat")
    status = await call(kernel, "status")
    assert status["models"]["classify"].startswith("m-chat") and "warning" not in status


async def test_enable_and_status_say_when_no_model_can_serve(no_model: tuple[Any, Any]) -> None:
    kernel, _ = no_model
    result = await enable(kernel)
    assert result["knowledge"] == "on"
    warning = result["warning"]
    assert "no model" in warning and "nothing is extracted" in warning
    assert "gigi llm profile set --owner guild:g1 --purpose chat" in warning
    assert result["models"]["classify"] is None and result["models"]["extract"] is None
    status = await call(kernel, "status")
    assert status["warning"] == warning
