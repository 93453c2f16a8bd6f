"""Model slots as purposes (seed 004 §5.9) through gigi-openai and the wire-level fake: each
call asks its own purpose's profile first (``classify``, ``extract``, ``complex``), falls back
to the general one (``routing``, ``chat``) when the guild has none, and a 503 on a slot's
model goes to that profile's fallback model with both attempts in usage. Escalation to
``complex`` follows the complexity score (``gigi_knowledge.extract.complexity``)."""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from gigi_knowledge.extract import complexity
from gigi_knowledge.service import service_of
from knowledge_fakes import classify, decision, extraction
from knowledge_helpers import enable, message, publish, rows

from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep

KEY = "sk-guild-knowledge-slots-01"


def _m(author: str) -> Any:
    return SimpleNamespace(author_id=author)


def test_complexity_score_is_zero_to_one_and_grows_with_each_signal() -> None:
    one = [_m("u1")]
    calm = complexity.score(one, ["decision"], [], 1.0, 30)
    assert calm == pytest.approx(0.3 / 30)
    full = [_m(f"u{i % 5}") for i in range(30)]
    busy = complexity.score(
        full, ["decision", "action", "blocker"], ["a", "b", "c", "d", "e"], 0.0, 30
    )
    assert busy == pytest.approx(1.0)
    # each signal alone raises the score
    assert complexity.score(one, ["decision"], [], 0.5, 30) > calm
    assert complexity.score(one, ["decision"], ["a", "b"], 1.0, 30) > calm
    assert complexity.score([_m("u1"), _m("u2")], ["decision"], [], 1.0, 30) > calm
    assert complexity.score(one, ["decision", "action"], [], 1.0, 30) > calm
    # "routine" is not a category of substance; duplicates count once
    assert complexity.score(one, ["decision", "routine"], ["a", "a"], 1.0, 30) == (
        complexity.score(one, ["decision"], ["a"], 1.0, 30)
    )


async def _open(
    tmp_path: pathlib.Path, database_url: str, profiles: dict[str, tuple[str, str | None]]
) -> AsyncIterator[tuple[Any, Any]]:
    async with (
        open_test_kernel(tmp_path, plugins=["knowledge", "openai"], database_url=database_url) as k,
        FakeOpenAI(api_key=KEY) as fake,
    ):
        for provider in k.registry.all_providers():  # one attempt per model, no sleeping
            provider._http = LlmHttpClient(
                retry=RetryPolicy(max_attempts=1), sleep=RecordingSleep()
            )
        await k.enable_plugin("g1", "knowledge")
        await k.llm.add_credential(
            "guild:g1", "openai-compatible", "main", KEY, base_url=fake.base_url
        )
        for purpose, (model, fallback) in profiles.items():
            await k.llm.set_profile("guild:g1", purpose, "main", model, fallback_model=fallback)
        yield k, fake


ALL = {
    "routing": ("m-route", None),
    "chat": ("m-chat", None),
    "embedding": ("m-embed", None),
    "classify": ("m-classify", "m-classify-small"),
    "extract": ("m-extract", None),
    "complex": ("m-complex", None),
}


@pytest.fixture
async def slots(database_url: str, tmp_path: pathlib.Path) -> AsyncIterator[tuple[Any, Any]]:
    async for pair in _open(tmp_path, database_url, ALL):
        yield pair


@pytest.fixture
async def low_threshold(
    monkeypatch: pytest.MonkeyPatch, database_url: str, tmp_path: pathlib.Path
) -> AsyncIterator[tuple[Any, Any]]:
    monkeypatch.setenv("GIGI_KNOWLEDGE_COMPLEXITY_THRESHOLD", "0.3")
    profiles = {k: v for k, v in ALL.items() if k != "complex"}
    async for pair in _open(tmp_path, database_url, profiles):
        yield pair


def _purposes(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted(
        (e["purpose"], e["model"], e["status"]) for e in events if e["purpose"] != "embedding"
    )


async def test_each_slot_uses_its_own_profile_and_its_fallback_model(
    slots: tuple[Any, Any],
) -> None:
    kernel, fake = slots
    await enable(kernel)
    m = message("we agreed to freeze the schema until march")
    fake.reply_error(503, "overloaded")
    fake.reply_text(json.dumps(classify(confidence=0.95)))
    fake.reply_text(
        json.dumps(
            extraction(decisions=[decision("The schema is frozen until March", [m.message_id])])
        )
    )
    await publish(kernel, m)
    models = [r.json["model"] for r in fake.requests_to("chat")]
    assert models[:3] == ["m-classify", "m-classify-small", "m-extract"]
    (d,) = await rows(kernel, "knowledge_decisions")
    assert d.summary == "The schema is frozen until March"
    events = await kernel.llm.usage_log.events("g1")
    used = _purposes(events)
    assert ("classify", "m-classify", "error") in used
    assert ("classify", "m-classify-small", "ok") in used
    assert ("extract", "m-extract", "ok") in used
    assert not any(p in ("routing", "chat") for p, _, _ in used)  # general ones untouched


async def test_a_complex_window_escalates_and_falls_back_to_extract_without_a_complex_profile(
    low_threshold: tuple[Any, Any],
) -> None:
    kernel, fake = low_threshold
    await enable(kernel)
    m = message("auth, billing and the gateway all move to v2 after the freeze")
    fake.reply_text(
        json.dumps(
            classify(
                categories=["decision", "action", "blocker"],
                entities=["auth", "billing", "gateway"],
                confidence=0.5,
            )
        )
    )
    fake.reply_text(
        json.dumps(
            extraction(decisions=[decision("Services move to v2 after the freeze", [m.message_id])])
        )
    )
    await publish(kernel, m)
    score = complexity.score(
        [m], ["decision", "action", "blocker"], ["auth", "billing", "gateway"], 0.5, 30
    )
    assert score > 0.3  # the test's threshold; the default 0.7 would not escalate this
    assert service_of(kernel).escalations == 1
    models = [r.json["model"] for r in fake.requests_to("chat")]
    assert models[-1] == "m-extract"  # complex had no profile: the next purpose served it
    used = _purposes(await kernel.llm.usage_log.events("g1"))
    assert ("extract", "m-extract", "ok") in used


async def test_a_complex_window_uses_the_complex_profile(
    monkeypatch: pytest.MonkeyPatch, database_url: str, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setenv("GIGI_KNOWLEDGE_COMPLEXITY_THRESHOLD", "0.3")
    async for kernel, fake in _open(tmp_path, database_url, ALL):
        await enable(kernel)
        m = message("auth, billing and the gateway all move to v2 after the freeze")
        fake.reply_text(
            json.dumps(
                classify(
                    categories=["decision", "action", "blocker"],
                    entities=["auth", "billing", "gateway"],
                    confidence=0.5,
                )
            )
        )
        fake.reply_text(
            json.dumps(extraction(decisions=[decision("Services move to v2", [m.message_id])]))
        )
        await publish(kernel, m)
        assert [r.json["model"] for r in fake.requests_to("chat")][-1] == "m-complex"
        used = _purposes(await kernel.llm.usage_log.events("g1"))
        assert ("complex", "m-complex", "ok") in used
        assert len(await rows(kernel, "knowledge_decisions")) == 1
