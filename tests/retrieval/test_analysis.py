"""Query analysis: deterministic without a routing profile; with one, a strict-JSON plan
through kernel.llm.chat (a wire-level fake provider), validated and clipped to scope."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.retrieval import retrieve
from gigi_core.retrieval.plan import deterministic_plan
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep
from tests.retrieval.helpers import MEMBER, NOW, VISIBLE, fake, retrieval_kernel

KEY = "sk-routing-test-5b1e"


async def routed(kernel, fake_server) -> None:
    for provider in kernel.registry.providers.values():
        provider._http = LlmHttpClient(
            retry=RetryPolicy(jitter=lambda: 1.0), sleep=RecordingSleep()
        )
    llm = kernel.llm
    await llm.add_credential(
        "guild:g1", "openai-compatible", "main", KEY, base_url=fake_server.base_url
    )
    await llm.set_profile("guild:g1", "routing", "main", "router-1")


async def ask(kernel, query: str):
    return await retrieve(
        kernel, actor=MEMBER, guild_id="g1", visible_channels=VISIBLE, query=query, now=NOW
    )


def test_deterministic_plan_reads_intent_entities_and_time() -> None:
    plan = deterministic_plan("Who owns the Postgres upgrade from last week?", ["b", "a"], NOW)
    assert plan.intent == "accountability" and plan.entities == ("Postgres",)
    assert plan.since == datetime(2026, 11, 23, tzinfo=UTC)  # NOW is Tuesday 2026-12-01
    assert plan.until == datetime(2026, 11, 30, tzinfo=UTC)
    assert [p.path for p in plan.paths] == ["a", "b"] and plan.source == "deterministic"
    assert deterministic_plan("what did #design decide", ["a"], NOW).intent == "institutional"
    assert deterministic_plan("anything about x", ["a"], NOW).intent == "factual_recall"


async def test_without_a_routing_profile_the_plan_is_deterministic(tmp_path, database_url) -> None:
    path = fake("alpha")
    async with (
        FakeOpenAI(api_key=KEY) as server,
        retrieval_kernel(tmp_path, database_url, path, plugins=["openai"]) as kernel,
    ):
        result = await ask(kernel, "postgres yesterday")
        assert result.plan.source == "deterministic" and server.requests == []
        assert path.calls[0][1].since == datetime(2026, 11, 30, tzinfo=UTC)


async def test_a_model_plan_is_validated_and_clipped_to_scope(tmp_path, database_url) -> None:
    alpha, beta = fake("alpha"), fake("beta")
    plan = {
        "intent": "temporal_context",
        "entities": ["Postgres"],
        "since": "2026-11-01T00:00:00Z",
        "until": None,
        "channels": ["c1", "c9"],  # c9 is hidden from the actor
        "paths": [{"path": "alpha", "query": "postgres upgrade"}, {"path": "ghost", "query": "x"}],
        "format": "direct_answer",
    }
    async with (
        FakeOpenAI(api_key=KEY) as server,
        retrieval_kernel(tmp_path, database_url, alpha, beta, plugins=["openai"]) as kernel,
    ):
        await routed(kernel, server)
        server.reply_text(json.dumps(plan))
        result = await ask(kernel, "when did we upgrade postgres")
    sent = server.last_request.json
    assert sent["model"] == "router-1"
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["strict"] is True
    assert result.plan.source == "model" and result.plan.intent == "temporal_context"
    assert result.plan.clipped == {"paths": 1, "channels": 1}
    assert [p.path for p in result.plan.paths] == ["alpha"] and beta.calls == []
    query, scope, _ = alpha.calls[0]
    assert query == "postgres upgrade" and scope.channel_ids == frozenset({"c1"})
    assert scope.since == datetime(2026, 11, 1, tzinfo=UTC)
    assert [r.hit.source_id for r in result.ranked] == ["notes:n:1"]  # c2's hit left out
    trace = json.dumps(result.trace())
    assert "Postgres" not in trace and "postgres" not in trace


async def test_an_invalid_plan_falls_back_to_every_path_with_the_raw_query(
    tmp_path, database_url
) -> None:
    alpha, beta = fake("alpha"), fake("beta")
    bad_plans = [
        "this is not json",
        json.dumps({"intent": "world_domination", "paths": []}),
        json.dumps(["a list"]),
    ]
    async with (
        FakeOpenAI(api_key=KEY) as server,
        retrieval_kernel(tmp_path, database_url, alpha, beta, plugins=["openai"]) as kernel,
    ):
        await routed(kernel, server)
        for n, bad in enumerate(bad_plans, 1):
            server.reply_text(bad)
            result = await ask(kernel, "postgres please")
            assert result.plan.source == "fallback", bad
            assert [p.path for p in result.plan.paths] == ["alpha", "beta"]
            assert alpha.calls[-1][0] == "postgres please" and len(beta.calls) == n
        server.reply_server_error(times=4)
        failed = await ask(kernel, "postgres please")
        assert failed.plan.source == "fallback" and len(failed.ranked) == 2


async def test_a_query_analyse_profile_plans_before_the_routing_one(tmp_path, database_url) -> None:
    """Seed 004's query-analysis slot: its own model when set, the routing model otherwise."""
    alpha, beta = fake("alpha"), fake("beta")
    plan = {
        "intent": "factual_recall",
        "entities": [],
        "since": None,
        "until": None,
        "channels": [],
        "paths": [{"path": "beta", "query": "release"}],
        "format": "direct_answer",
    }
    async with (
        FakeOpenAI(api_key=KEY) as server,
        retrieval_kernel(tmp_path, database_url, alpha, beta, plugins=["openai"]) as kernel,
    ):
        await routed(kernel, server)
        server.reply_text(json.dumps(plan))
        assert (await ask(kernel, "the release")).plan.source == "model"
        assert server.last_request.json["model"] == "router-1"
        await kernel.llm.set_profile("guild:g1", "query_analyse", "main", "analyser-1")
        server.reply_text(json.dumps(plan))
        result = await ask(kernel, "the release")
        [usage] = [e for e in await kernel.llm.usage_log.events("g1") if e["model"] == "analyser-1"]
    assert server.last_request.json["model"] == "analyser-1"
    assert result.plan.source == "model" and [p.path for p in result.plan.paths] == ["beta"]
    assert usage["purpose"] == "query_analyse"
