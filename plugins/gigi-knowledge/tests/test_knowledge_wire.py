"""The pipeline on the real provider path: gigi-openai against the wire-level fake server,
the guild's own credential and profiles. Classify goes to the ``routing`` profile with
``response_format: json_schema`` (strict); a 503 on its model falls back to the profile's
fallback model, both attempts in usage; extract goes to ``chat``; vectors to ``embedding``."""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from knowledge_fakes import classify, decision, extraction
from knowledge_helpers import enable, message, publish, rows

from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep

KEY = "sk-guild-knowledge-test-0001"


@pytest.fixture
async def wired(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[tuple[Any, Any]]:
    async with (
        open_test_kernel(tmp_path, plugins=["knowledge", "openai"], database_url=database_url) as k,
        FakeOpenAI(api_key=KEY) as fake,
    ):
        for provider in k.registry.all_providers():  # one attempt per model, no sleeping
            provider._http = LlmHttpClient(
                retry=RetryPolicy(max_attempts=1), sleep=RecordingSleep()
            )
        await k.enable_plugin("g1", "knowledge")
        llm = k.llm
        await llm.add_credential(
            "guild:g1", "openai-compatible", "main", KEY, base_url=fake.base_url
        )
        await llm.set_profile(
            "guild:g1", "routing", "main", "m-route", fallback_model="m-route-small"
        )
        await llm.set_profile("guild:g1", "chat", "main", "m-chat")
        await llm.set_profile("guild:g1", "embedding", "main", "m-embed")
        yield k, fake


async def test_classify_falls_back_and_extract_runs_on_the_guilds_profiles(
    wired: tuple[Any, Any],
) -> None:
    kernel, fake = wired
    await enable(kernel)
    m = message("we agreed to freeze the schema until march")
    fake.reply_error(503, "overloaded")
    fake.reply_text(json.dumps(classify()))
    fake.reply_text(
        json.dumps(
            extraction(decisions=[decision("The schema is frozen until March", [m.message_id])])
        )
    )
    await publish(kernel, m)
    chats = fake.requests_to("chat")
    assert [r.json["model"] for r in chats] == ["m-route", "m-route-small", "m-chat"]
    fmt = chats[0].json["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "knowledge_classify"
    (d,) = await rows(kernel, "knowledge_decisions")
    assert d.summary == "The schema is frozen until March"
    assert d.extraction_model == "openai-compatible:fake-model"  # the model the reply names
    events = await kernel.llm.usage_log.events("g1")
    routing = sorted((e["model"], e["status"]) for e in events if e["purpose"] == "routing")
    assert routing == [("m-route", "error"), ("m-route-small", "ok")]
    assert any(e["purpose"] == "embedding" and e["status"] == "ok" for e in events)
    assert all(e["billing_owner_type"] == "guild" for e in events)
