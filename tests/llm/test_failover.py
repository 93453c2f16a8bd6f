"""Provider failover inside an owner (issue 30): an owner's ordered list per purpose, the
error classes that move a call on, usage rows that say which entry served and why, budgets
held and settled per attempt. Both backends; wire-level fakes on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from gigi_core import Actor
from gigi_core.kernel import Kernel
from gigi_core.llm import LlmHttpClient, ProviderError, RetryPolicy
from gigi_core.llm.records import LlmConfigError
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeAnthropic, FakeOpenAI, RecordingSleep
from tests.llm.budget_helpers import MOST, counters, request, usage_of
from tests.llm.service_helpers import leaks

GUILD = "g1"
OWNER = f"guild:{GUILD}"
KEY_A = "sk-failover-A-0123456789"
KEY_B = "sk-failover-B-9876543210"
KEY_C = "sk-ant-failover-C-13579"
MEMBER = Actor(id="u1", roles=frozenset())


@asynccontextmanager
async def failover_kernel(tmp_path: Path, database_url: str) -> AsyncIterator[Kernel]:
    """gigi-openai and gigi-anthropic, retry waits recorded (not slept)."""
    async with open_test_kernel(
        tmp_path, plugins=["openai", "anthropic"], database_url=database_url
    ) as k:
        for name in ("openai-compatible", "anthropic"):
            k.registry.provider(name)._http = LlmHttpClient(
                retry=RetryPolicy(jitter=lambda: 1.0), sleep=RecordingSleep()
            )
        yield k


async def two_keys(kernel: Kernel, a: FakeOpenAI, b: FakeOpenAI) -> None:
    llm = kernel.llm
    await llm.add_credential(OWNER, "openai-compatible", "main", KEY_A, base_url=a.base_url)
    await llm.add_credential(OWNER, "openai-compatible", "spare", KEY_B, base_url=b.base_url)
    await llm.set_profile(OWNER, "chat", "main", "m-1")


async def chat(kernel: Kernel):
    return await kernel.llm.chat(request(), guild_id=GUILD, actor=MEMBER, channel_id="c1")


async def rows(kernel: Kernel) -> list[dict]:
    return list(reversed(await kernel.llm.usage_log.events(GUILD)))


async def test_a_rate_limited_key_moves_on_to_the_next_and_usage_says_so(
    database_url, tmp_path
) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key=KEY_A) as a,
        FakeOpenAI(api_key=KEY_B) as b,
    ):
        await two_keys(kernel, a, b)
        plan = await kernel.llm.set_failover(OWNER, "chat", "spare", "rate_limited,server_error")
        assert plan.on == {"rate_limited", "server"}
        await kernel.llm.set_budget(GUILD, "guild", None, limit=10 * MOST, window="daily")
        a.reply_rate_limited(times=4)  # the client's retries are spent first
        b.reply_text("from spare", usage=usage_of(30))
        reply = await chat(kernel)
        assert reply.text == "from spare"
        assert b.last_request.json["model"] == "m-1"  # the profile's model on the other key
        first, second = await rows(kernel)
        assert (first["status"], first["error_class"], first["failover_step"]) == (
            "error",
            "rate_limited",
            None,
        )
        assert (second["status"], second["failover_step"], second["failover_reason"]) == (
            "ok",
            1,
            "rate_limited",
        )
        assert second["billing_owner_id"] == GUILD
        assert await counters(kernel) == (30, 0)  # the failed attempt held and spent nothing
        assert await leaks(kernel, KEY_A, KEY_B, "from spare") == []  # metadata only


async def test_an_overloaded_anthropic_key_moves_on_to_openai_with_its_model(
    database_url, tmp_path
) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeAnthropic(api_key=KEY_C) as claude,
        FakeOpenAI(api_key=KEY_B) as b,
    ):
        llm = kernel.llm
        await llm.add_credential(OWNER, "anthropic", "claude", KEY_C, base_url=claude.base_url)
        await llm.add_credential(OWNER, "openai-compatible", "spare", KEY_B, base_url=b.base_url)
        await llm.set_profile(OWNER, "chat", "claude", "claude-sonnet-4-5")
        await llm.set_failover(OWNER, "chat", "spare:gpt-4o-mini")  # default classes
        claude.reply_overloaded(times=4)
        b.reply_text("served")
        assert (await chat(kernel)).text == "served"
        assert b.last_request.json["model"] == "gpt-4o-mini"
        first, second = await rows(kernel)
        assert (first["provider"], first["error_class"]) == ("anthropic", "overloaded")
        assert (second["provider"], second["model"], second["failover_reason"]) == (
            "openai-compatible",
            "gpt-4o-mini",
            "overloaded",
        )


async def test_a_server_error_then_a_second_failure_reports_both_keys(
    database_url, tmp_path
) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key=KEY_A) as a,
        FakeOpenAI(api_key=KEY_B) as b,
    ):
        await two_keys(kernel, a, b)
        await kernel.llm.set_failover(OWNER, "chat", "spare")
        a.reply_server_error(500, times=4)
        b.reply_server_error(503, times=4)
        with pytest.raises(ProviderError) as caught:
            await chat(kernel)
        assert caught.value.error_class == "server"
        assert "tried main, then spare for chat" in (caught.value.hint or "")
        assert [r["failover_step"] for r in await rows(kernel)] == [None, 1]


async def test_an_auth_error_does_not_fail_over_unless_listed(database_url, tmp_path) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key="sk-some-other-key-000") as a,  # rejects KEY_A: 401
        FakeOpenAI(api_key=KEY_B) as b,
    ):
        await two_keys(kernel, a, b)
        await kernel.llm.set_failover(OWNER, "chat", "spare")
        b.reply_text("never", times=2)
        with pytest.raises(ProviderError) as caught:
            await chat(kernel)
        assert caught.value.error_class == "auth"
        assert b.requests_to("chat") == []
        # listed on purpose: now it moves on
        await kernel.llm.set_failover(OWNER, "chat", "spare", "auth")
        assert (await chat(kernel)).text == "never"


async def test_cancelling_during_the_failover_attempt_leaves_rows_and_no_hold(
    database_url, tmp_path
) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key=KEY_A) as a,
        FakeOpenAI(api_key=KEY_B) as b,
    ):
        await two_keys(kernel, a, b)
        await kernel.llm.set_failover(OWNER, "chat", "spare")
        await kernel.llm.set_budget(GUILD, "guild", None, limit=10 * MOST, window="daily")
        a.reply_rate_limited(times=4)
        b.reply_text("too late", delay=5.0)
        task = asyncio.create_task(chat(kernel))
        for _ in range(500):
            if b.requests_to("chat"):
                break
            await asyncio.sleep(0.01)
        assert b.requests_to("chat"), "the failover attempt never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        first, second = await rows(kernel)
        assert first["error_class"] == "rate_limited"
        assert (second["error_class"], second["failover_step"]) == ("cancelled", 1)
        assert await counters(kernel) == (0, 0)


async def test_a_list_names_only_the_owners_own_credentials(database_url, tmp_path) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI() as a,
        FakeOpenAI() as b,
    ):
        await two_keys(kernel, a, b)
        await kernel.llm.add_credential(
            "guild:other", "openai-compatible", "theirs", KEY_B, base_url=b.base_url
        )
        with pytest.raises(LlmConfigError) as caught:
            await kernel.llm.set_failover(OWNER, "chat", "spare,theirs")
        assert "guild:g1 has no active credential labelled 'theirs'" in str(caught.value)
        assert "main, spare" in str(caught.value)
        assert "never moves a bill" in (caught.value.hint or "")
        with pytest.raises(LlmConfigError, match="unknown error class 'teapot'"):
            await kernel.llm.set_failover(OWNER, "chat", "spare", "teapot")
        with pytest.raises(LlmConfigError, match="repeats an entry"):
            await kernel.llm.set_failover(OWNER, "chat", "spare,spare")
        with pytest.raises(LlmConfigError, match="unknown purpose"):
            await kernel.llm.set_failover(OWNER, "chitchat", "spare")
        await kernel.llm.set_failover(OWNER, "chat", "spare:m-2", by="admin")
        [plan] = await kernel.llm.failover(OWNER)
        assert plan.as_dict()["order"] == [
            {
                "credential": "spare",
                "provider": "openai-compatible",
                "model": "m-2",
                "revoked": False,
            }
        ]
        await kernel.llm.clear_failover(OWNER, "chat")
        assert await kernel.llm.failover(OWNER) == []
        with pytest.raises(LlmConfigError, match="no failover list for chat"):
            await kernel.llm.clear_failover(OWNER, "chat")


async def test_a_revoked_entry_is_skipped(database_url, tmp_path) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key=KEY_A) as a,
        FakeOpenAI(api_key=KEY_B) as b,
    ):
        await two_keys(kernel, a, b)
        await kernel.llm.set_failover(OWNER, "chat", "spare")
        await kernel.llm.revoke_credential(OWNER, "spare")
        [plan] = await kernel.llm.failover(OWNER)
        assert plan.entries[0].revoked
        a.reply_rate_limited(times=4)
        with pytest.raises(ProviderError) as caught:
            await chat(kernel)
        assert caught.value.error_class == "rate_limited"
        assert b.requests == []


async def test_embeddings_fail_over_too(database_url, tmp_path) -> None:
    async with (
        failover_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key=KEY_A) as a,
        FakeOpenAI(api_key=KEY_B, embedding_dimension=4) as b,
    ):
        llm = kernel.llm
        await llm.add_credential(OWNER, "openai-compatible", "main", KEY_A, base_url=a.base_url)
        await llm.add_credential(OWNER, "openai-compatible", "spare", KEY_B, base_url=b.base_url)
        await llm.set_profile(OWNER, "embedding", "main", "emb-1")
        await llm.set_failover(OWNER, "embedding", "spare:emb-2")
        a.reply_server_error(502, times=4)
        reply = await llm.embed(["one", "two"], guild_id=GUILD, actor=MEMBER)
        assert reply.dimension == 4 and len(reply.vectors) == 2
        assert b.last_request.json["model"] == "emb-2"
        served = (await rows(kernel))[-1]
        assert (served["purpose"], served["failover_step"], served["failover_reason"]) == (
            "embedding",
            1,
            "server",
        )
