"""Usage events: one per provider call, success or failure, metadata only; aggregates."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gigi_core.llm import ChatRequest, EmbeddingRequest, ProviderError, UserMessage
from gigi_core.llm.records import LlmConfigError
from gigi_core.llm.usage import UsageRecord, parse_since
from gigi_core.store.llm_tables import LlmUsageEvent
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, guild_usage, leaks, llm_kernel

# No 8-character run in common with the keys ("-CANARY-"): key fragments are scrubbed.
PROMPT_CANARY = "PROMPT_CANARY_41c7d"
REPLY_CANARY = "REPLY_CANARY_93be2"


async def test_usage_rows_for_success_and_failure_hold_no_text(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=GUILD_KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(
            "guild:g1", "openai-compatible", "main", GUILD_KEY, base_url=fake.base_url
        )
        await llm.set_profile("guild:g1", "chat", "main", "m-1", params={"temperature": 0.2})
        fake.reply_text(f"the answer is {REPLY_CANARY}")
        request = ChatRequest(
            model="ignored", messages=[UserMessage(content=f"secret plan {PROMPT_CANARY}")]
        )
        reply = await llm.chat(request, guild_id="g1", actor="u1", channel_id="c1", request_id="r1")
        assert REPLY_CANARY in reply.text
        assert fake.last_request.json["model"] == "m-1"  # the profile decides the model
        assert fake.last_request.json["temperature"] == 0.2  # profile params fill gaps

        fake.reply_error(500, f"upstream choked on {PROMPT_CANARY}", times=4)
        with pytest.raises(ProviderError):
            await llm.chat(request, guild_id="g1", actor="u1", channel_id="c1", request_id="r2")

        events = sorted(await llm.usage_log.events("g1"), key=lambda e: e["id"])
        ok, failed = events
        assert ok["request_id"] == "r1" and ok["status"] == "ok" and ok["error_class"] is None
        assert (ok["input_tokens"], ok["output_tokens"], ok["cached_tokens"]) == (11, 7, 0)
        assert failed["request_id"] == "r2" and failed["status"] == "error"
        assert failed["error_class"] == "server" and failed["input_tokens"] is None
        for e in events:
            assert (e["actor_id"], e["guild_id"], e["channel_id"]) == ("u1", "g1", "c1")
            assert (e["provider"], e["model"], e["purpose"]) == ("openai-compatible", "m-1", "chat")
            assert (e["billing_owner_type"], e["billing_owner_id"]) == ("guild", "g1")
            assert e["latency_ms"] is not None and e["latency_ms"] >= 0
        assert await leaks(kernel, PROMPT_CANARY, REPLY_CANARY, GUILD_KEY) == []
        assert set(LlmUsageEvent.__table__.columns.keys()).isdisjoint(
            {"prompt", "completion", "body", "text", "messages", "response"}
        )


async def test_embeddings_resolve_their_own_profile_and_record_usage(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=GUILD_KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(
            "guild:g1", "openai-compatible", "main", GUILD_KEY, base_url=fake.base_url
        )
        await llm.set_profile("guild:g1", "embedding", "main", "embed-1")
        result = await llm.embed(
            [f"a {PROMPT_CANARY}", "b"], guild_id="g1", actor="u1", channel_id="c1"
        )
        assert len(result.vectors) == 2 and result.dimension == 8
        again = await llm.embed(
            EmbeddingRequest(model="x", inputs=["c"], dimensions=4), guild_id="g1", actor="u1"
        )
        assert again.dimension == 4 and fake.last_request.json["model"] == "embed-1"
        [row] = await llm.usage("g1")
        assert (row.model, row.purpose, row.status, row.calls) == ("embed-1", "embedding", "ok", 2)
        assert await leaks(kernel, PROMPT_CANARY) == []


async def test_an_embedding_says_which_model_was_asked_the_fallback_when_it_answered(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=GUILD_KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(
            "guild:g1", "openai-compatible", "main", GUILD_KEY, base_url=fake.base_url
        )
        await llm.set_profile("guild:g1", "embedding", "main", "embed-1", fallback_model="embed-2")
        first = await llm.embed(["a"], guild_id="g1", actor="u1")
        # The fake names every model "fake-embedding" (as providers answer with aliases).
        assert (first.requested_model, first.model) == ("embed-1", "fake-embedding")
        fake.reply_error(404, "The model `embed-1` does not exist")
        second = await llm.embed(["b"], guild_id="g1", actor="u1")
        assert [r.json["model"] for r in fake.requests_to("embeddings")] == [
            "embed-1",
            "embed-1",
            "embed-2",
        ]
        assert second.requested_model == "embed-2"


async def test_usage_aggregates_by_provider_model_purpose_status(database_url, tmp_path) -> None:
    def event(model: str, status: str, tokens: int | None, **kw) -> UsageRecord:
        return guild_usage(
            kw.pop("guild", "g1"),
            tokens,
            request_id="r",
            model=model,
            status=status,
            output_tokens=tokens,
            billing_owner_id="g1",
            error_class=None if status == "ok" else "server",
            **kw,
        )

    async with llm_kernel(tmp_path, database_url) as kernel:
        log = kernel.llm.usage_log
        for record in (
            event("a", "ok", 10),
            event("a", "ok", 5),
            event("a", "error", None),
            event("b", "ok", 1, purpose="routing"),
            event("a", "ok", 100, guild="g2"),
        ):
            await log.record(record)
        # One old row outside the window (the log takes an explicit time for imports).
        old = datetime.now(UTC) - timedelta(days=30)
        await log.record(replace(event("a", "ok", 1000), created_at=old))
        rows = [r.as_dict() for r in await kernel.llm.usage("g1", parse_since("7d"))]
        assert [(r["model"], r["purpose"], r["status"], r["calls"]) for r in rows] == [
            ("a", "chat", "error", 1),
            ("a", "chat", "ok", 2),
            ("b", "routing", "ok", 1),
        ]
        assert rows[1]["input_tokens"] == 15 and rows[1]["output_tokens"] == 15
        assert rows[0]["input_tokens"] == 0
        everything = await kernel.llm.usage("g1")
        assert sum(r.calls for r in everything) == 5


def test_parse_since() -> None:
    now = datetime(2026, 5, 10, 12, tzinfo=UTC)
    assert parse_since("7d", now=now) == now - timedelta(days=7)
    assert parse_since("24h", now=now) == now - timedelta(hours=24)
    assert parse_since("30m", now=now) == now - timedelta(minutes=30)
    assert parse_since("2w", now=now) == now - timedelta(weeks=2)
    assert parse_since("2026-05-01") == datetime(2026, 5, 1, tzinfo=UTC)
    assert parse_since("2026-05-01T02:00:00+02:00") == datetime(2026, 5, 1, tzinfo=UTC)
    assert parse_since(None) is None
    with pytest.raises(LlmConfigError, match="cannot read --since"):
        parse_since("last tuesday")
