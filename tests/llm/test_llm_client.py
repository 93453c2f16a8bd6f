"""The owned client over real loopback HTTP: retries, hints, the cap, error surfacing."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator

import pytest

from gigi_core.llm import LlmHttpClient, ProviderError, RetryPolicy
from gigi_core.llm.client import close_shared_http_client, shared_http_client
from gigi_core.testing.fake_providers import (
    FakeAnthropic,
    FakeGemini,
    FakeOpenAI,
    FakeOpenRouter,
    RecordingSleep,
)

PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def client(sleeps: RecordingSleep) -> LlmHttpClient:
    return LlmHttpClient(retry=RetryPolicy(jitter=lambda: 1.0), sleep=sleeps)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


async def _post(client: LlmHttpClient, fake: FakeOpenAI, **kw: object) -> object:
    return await client.post_json(
        f"{fake.base_url}/chat/completions", PAYLOAD, provider="fake", **kw
    )


async def test_success_returns_body_and_request_id(client: LlmHttpClient, fake: FakeOpenAI) -> None:
    fake.reply_text("hello")
    reply = await _post(client, fake)
    assert reply.body["choices"][0]["message"]["content"] == "hello"
    assert reply.request_id == "req_fake_1" and reply.attempts == 1
    assert fake.last_request.json == PAYLOAD
    assert fake.last_request.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        ({"retry_after": 2}, 2.0),
        ({"retry_after_ms": 1500}, 1.5),
    ],
)
async def test_429_honours_hint_then_succeeds(
    client: LlmHttpClient, fake: FakeOpenAI, sleeps: RecordingSleep, hint: dict, expected: float
) -> None:
    fake.reply_rate_limited(**hint)
    fake.reply_text("ok")
    reply = await _post(client, fake)
    assert reply.attempts == 2 and len(fake.requests) == 2
    assert sleeps.waits == [expected]


async def test_429_http_date_hint(
    client: LlmHttpClient, fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_rate_limited(retry_after_date=20)
    fake.reply_text("ok")
    await _post(client, fake)
    assert len(sleeps.waits) == 1 and 17 <= sleeps.waits[0] <= 21


async def test_gemini_retry_info_hint(client: LlmHttpClient, sleeps: RecordingSleep) -> None:
    async with FakeGemini() as gemini:
        gemini.reply_rate_limited(retry_delay="46s")
        gemini.reply_text("ok")
        url = f"{gemini.base_url}/v1beta/models/gemini-x:generateContent"
        reply = await client.post_json(url, {"contents": []}, provider="gemini")
    assert sleeps.waits == [46.0] and reply.attempts == 2


async def test_hint_above_cap_fails_fast_with_provider_message(
    client: LlmHttpClient, sleeps: RecordingSleep
) -> None:
    async with FakeGemini() as gemini:
        gemini.reply_rate_limited(retry_delay="7200s", message="Quota exceeded, limit: 0")
        url = f"{gemini.base_url}/v1beta/models/gemini-x:generateContent"
        with pytest.raises(ProviderError) as info:
            await client.post_json(url, {"contents": []}, provider="gemini")
    err = info.value
    assert "Quota exceeded, limit: 0" in str(err) and "cap" in str(err)
    assert err.retry_after == 7200 and not err.retryable and err.error_class == "rate_limited"
    assert sleeps.waits == [] and len(gemini.requests) == 1


async def test_no_hint_uses_exponential_backoff(
    client: LlmHttpClient, fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_server_error(503, times=3)
    fake.reply_text("ok")
    reply = await _post(client, fake)
    assert reply.attempts == 4 and sleeps.waits == [0.5, 1.0, 2.0]


async def test_four_500s_exhaust_the_budget(
    client: LlmHttpClient, fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_server_error(500, times=4)
    fake.reply_text("never reached")
    with pytest.raises(ProviderError) as info:
        await _post(client, fake)
    assert info.value.status == 500 and info.value.attempts == 4 and info.value.retryable
    assert len(fake.requests) == 4 and len(sleeps.waits) == 3 and fake.pending() == 1


@pytest.mark.parametrize(
    ("status", "cls"),
    [(400, "bad_request"), (401, "auth"), (402, "credit"), (403, "permission"), (404, "not_found")],
)
async def test_client_errors_are_not_retried(
    client: LlmHttpClient, fake: FakeOpenAI, status: int, cls: str
) -> None:
    fake.reply_error(status, f"verbatim provider text {status}")
    with pytest.raises(ProviderError) as info:
        await _post(client, fake)
    err = info.value
    assert err.status == status and err.error_class == cls and not err.retryable
    assert err.provider_message == f"verbatim provider text {status}"
    assert len(fake.requests) == 1


async def test_openai_insufficient_quota_429_is_not_retried(
    client: LlmHttpClient, fake: FakeOpenAI
) -> None:
    fake.reply_error(429, "You exceeded your current quota", type="insufficient_quota")
    with pytest.raises(ProviderError) as info:
        await _post(client, fake)
    assert info.value.error_class == "credit" and len(fake.requests) == 1


async def test_anthropic_spend_limit_429_is_not_retried(client: LlmHttpClient) -> None:
    async with FakeAnthropic() as anthropic:
        anthropic.reply_spend_limit()
        with pytest.raises(ProviderError) as info:
            await client.post_json(f"{anthropic.base_url}/v1/messages", {}, provider="anthropic")
    assert info.value.error_class == "credit" and not info.value.retryable
    assert info.value.request_id == "req_fake_1" and len(anthropic.requests) == 1


async def test_anthropic_529_is_retried(client: LlmHttpClient, sleeps: RecordingSleep) -> None:
    async with FakeAnthropic() as anthropic:
        anthropic.reply_overloaded()
        anthropic.reply_text("ok")
        reply = await client.post_json(f"{anthropic.base_url}/v1/messages", {}, provider="a")
    assert reply.attempts == 2 and len(sleeps.waits) == 1


async def test_x_should_retry_false_is_respected(client: LlmHttpClient, fake: FakeOpenAI) -> None:
    fake.reply_error(503, "down", headers={"x-should-retry": "false"})
    with pytest.raises(ProviderError):
        await _post(client, fake)
    assert len(fake.requests) == 1


async def test_html_error_page_is_stripped(client: LlmHttpClient, fake: FakeOpenAI) -> None:
    fake.reply_html(502, times=4)
    with pytest.raises(ProviderError) as info:
        await _post(client, fake)
    message = info.value.provider_message
    assert message.startswith("502 Bad Gateway nginx") and "<" not in message.split("[")[0]
    assert fake.base_url in message and "console.log" not in message


async def test_huge_error_body_is_trimmed(client: LlmHttpClient, fake: FakeOpenAI) -> None:
    fake.reply_error(400, "y" * 10_000)
    with pytest.raises(ProviderError) as info:
        await _post(client, fake)
    assert len(info.value.provider_message) < 2100


async def test_non_json_200_is_an_invalid_response(client: LlmHttpClient, fake: FakeOpenAI) -> None:
    fake.reply_raw(200, body="<html><body>captive portal</body></html>", content_type="text/html")
    with pytest.raises(ProviderError) as info:
        await _post(client, fake)
    assert info.value.error_class == "invalid_response"
    assert "captive portal" in info.value.provider_message


async def test_error_inside_200_is_raised_and_retried_by_its_code(
    client: LlmHttpClient, sleeps: RecordingSleep
) -> None:
    async with FakeOpenRouter() as router:
        router.reply_error_in_body(502, "Provider returned error", raw="upstream exploded")
        router.reply_error_in_body(400, "Provider returned error", raw="bad things")
        with pytest.raises(ProviderError) as info:
            await client.post_json(f"{router.base_url}/chat/completions", {}, provider="or")
    err = info.value
    assert len(router.requests) == 2 and len(sleeps.waits) == 1
    assert err.status == 400 and "bad things" in err.provider_message and not err.retryable


async def test_timeout_is_retried_then_raised(sleeps: RecordingSleep, fake: FakeOpenAI) -> None:
    client = LlmHttpClient(retry=RetryPolicy(max_attempts=2), sleep=sleeps, timeout=0.1)
    fake.reply_timeout(delay=1.0, times=2)
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        await _post(client, fake)
    assert time.monotonic() - started < 0.9
    assert info.value.error_class == "timeout" and info.value.attempts == 2


async def test_per_call_timeout_overrides_client_default(
    client: LlmHttpClient, fake: FakeOpenAI
) -> None:
    client.retry = RetryPolicy(max_attempts=1)
    fake.reply_timeout(delay=1.0)
    with pytest.raises(ProviderError) as info:
        await _post(client, fake, read_timeout=0.1)
    assert info.value.error_class == "timeout"


async def test_unreachable_host_is_a_network_error(
    client: LlmHttpClient, sleeps: RecordingSleep
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ProviderError) as info:
        await client.post_json(f"http://127.0.0.1:{port}/v1/chat/completions", {}, provider="x")
    assert info.value.error_class == "network" and info.value.attempts == 4
    assert len(sleeps.waits) == 3


async def test_bad_base_url_is_a_config_error_without_retry(
    client: LlmHttpClient, sleeps: RecordingSleep
) -> None:
    with pytest.raises(ProviderError) as info:
        await client.post_json("localhost:11434/v1/chat/completions", {}, provider="x")
    assert info.value.error_class == "config" and sleeps.waits == []


async def test_real_sleep_waits_for_a_tiny_hint(fake: FakeOpenAI) -> None:
    client = LlmHttpClient()
    fake.reply_rate_limited(retry_after_ms=120)
    fake.reply_text("ok")
    started = time.monotonic()
    reply = await _post(client, fake)
    assert time.monotonic() - started >= 0.12 and reply.attempts == 2


async def test_one_shared_pool_per_loop() -> None:
    first = shared_http_client()
    assert shared_http_client() is first
    await close_shared_http_client()
    assert first.is_closed and shared_http_client() is not first
    await close_shared_http_client()
