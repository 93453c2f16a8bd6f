"""Providers that stall or flood: deadlines per attempt and per call, body caps, wait hints.

Everything runs over real loopback HTTP against the fake servers (no mocked transport).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator

import pytest

from gigi_core.errors import ConfigError
from gigi_core.llm import LlmHttpClient, ProviderError, RetryPolicy
from gigi_core.llm.retry import parse_retry_after, retry_hint
from gigi_core.llm.settings import LlmSettings
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep

PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def _client(sleeps: RecordingSleep, attempts: int = 1, **settings: float) -> LlmHttpClient:
    return LlmHttpClient(
        retry=RetryPolicy(max_attempts=attempts, jitter=lambda: 1.0),
        sleep=sleeps,
        settings=LlmSettings(**settings),
    )


async def _post(client: LlmHttpClient, fake: FakeOpenAI, **kw: object) -> object:
    return await client.post_json(
        f"{fake.base_url}/chat/completions", PAYLOAD, provider="fake", **kw
    )


# ---------------------------------------------------------------- stalls


async def test_a_trickling_server_is_cut_off_at_the_attempt_deadline(
    fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    """Headers, then a byte every 0.2 s: each read succeeds, the attempt never ends alone."""
    fake.reply_trickle(interval=0.2)
    client = _client(sleeps)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await _post(client, fake, read_timeout=1.0)
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, f"a 1 s deadline ran for {elapsed:.1f} s"
    assert caught.value.error_class == "timeout"
    assert "1s" in caught.value.provider_message


async def test_the_attempt_deadline_setting_applies_without_a_request_timeout(
    fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_trickle(interval=0.2)
    client = _client(sleeps, attempt_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await _post(client, fake)
    assert time.monotonic() - started < 3.0
    assert "GIGI_LLM_ATTEMPT_TIMEOUT" in caught.value.provider_message


async def test_the_whole_call_has_a_deadline_across_retries(
    fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    """Four attempts of 1 s each would take 4 s; the call's own 1.5 s deadline wins."""
    fake.reply_trickle(interval=0.2, times=4)
    client = _client(sleeps, attempts=4, attempt_timeout=1.0, call_timeout=1.5)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await _post(client, fake)
    elapsed = time.monotonic() - started
    assert elapsed < 2.8, f"the call ran {elapsed:.1f} s past its 1.5 s deadline"
    assert caught.value.error_class == "timeout" and not caught.value.retryable
    assert len(fake.requests) <= 2
    assert "GIGI_LLM_CALL_TIMEOUT" in str(caught.value)


async def test_a_retry_wait_longer_than_the_time_left_is_not_slept(
    fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_rate_limited(retry_after=30)
    client = _client(sleeps, attempts=4, call_timeout=5.0)
    with pytest.raises(ProviderError) as caught:
        await _post(client, fake)
    assert sleeps.waits == [] and len(fake.requests) == 1
    assert caught.value.error_class == "rate_limited"
    assert "GIGI_LLM_CALL_TIMEOUT" in (caught.value.hint or "")


# ---------------------------------------------------------------- floods


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_body_over_the_cap_is_refused(
    fake: FakeOpenAI, sleeps: RecordingSleep, chunked: bool
) -> None:
    fake.reply_oversized(2_000_000, chunked=chunked)
    client = _client(sleeps, max_response_bytes=100_000)
    with pytest.raises(ProviderError) as caught:
        await _post(client, fake)
    err = caught.value
    assert err.error_class == "invalid_response" and not err.retryable
    assert (
        "100000" in err.provider_message and "GIGI_LLM_MAX_RESPONSE_BYTES" in err.provider_message
    )
    assert len(fake.requests) == 1


async def test_a_body_under_the_cap_is_read_whole(fake: FakeOpenAI, sleeps: RecordingSleep) -> None:
    fake.reply_oversized(50_000, chunked=True)
    reply = await _post(_client(sleeps, max_response_bytes=100_000), fake)
    assert len(reply.body["choices"][0]["message"]["content"]) > 40_000


async def test_an_oversized_error_body_still_reports_the_status(
    fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_oversized(500_000, status=400, chunked=True)
    with pytest.raises(ProviderError) as caught:
        await _post(_client(sleeps, max_response_bytes=100_000), fake)
    assert caught.value.status == 400 and caught.value.error_class == "bad_request"
    assert len(caught.value.provider_message) < 2100


# ---------------------------------------------------------------- wait hints


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "nan"},
        {"retry-after": "NaN"},
        {"retry-after": "inf"},
        {"retry-after": "-5"},
        {"retry-after-ms": "nan"},
        {"retry-after-ms": "-1000"},
        {"retry-after-ms": "infinity"},
    ],
)
async def test_non_finite_and_negative_hints_fall_back_to_backoff(
    fake: FakeOpenAI, sleeps: RecordingSleep, headers: dict[str, str]
) -> None:
    fake.reply_raw(429, json={"error": {"message": "slow down"}}, headers=headers)
    fake.reply_text("ok")
    client = LlmHttpClient(retry=RetryPolicy(jitter=lambda: 1.0), sleep=sleeps)
    reply = await _post(client, fake)
    assert reply.attempts == 2
    assert len(sleeps.waits) == 1
    assert math.isfinite(sleeps.waits[0]) and sleeps.waits[0] == 0.5  # the first backoff step


@pytest.mark.parametrize("value", ["nan", "-nan", "inf", "-inf", "-3", "1e999"])
def test_parse_retry_after_rejects_non_finite_and_negative(value: str) -> None:
    assert parse_retry_after(value) is None
    assert retry_hint({"retry-after-ms": value}) is None


def test_a_negative_or_non_finite_body_delay_is_ignored() -> None:
    assert retry_hint({}, -4.0) is None
    assert retry_hint({}, math.nan) is None
    assert RetryPolicy(jitter=lambda: 1.0).delay(1, math.nan) == 0.5


# ---------------------------------------------------------------- settings


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIGI_LLM_ATTEMPT_TIMEOUT", "12.5")
    monkeypatch.setenv("GIGI_LLM_CALL_TIMEOUT", "30")
    monkeypatch.setenv("GIGI_LLM_MAX_RESPONSE_BYTES", "1000000")
    settings = LlmSettings.from_env()
    assert (settings.attempt_timeout, settings.call_timeout) == (12.5, 30.0)
    assert settings.max_response_bytes == 1_000_000
    assert LlmHttpClient().settings == settings


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GIGI_LLM_ATTEMPT_TIMEOUT", "soon"),
        ("GIGI_LLM_ATTEMPT_TIMEOUT", "0"),
        ("GIGI_LLM_CALL_TIMEOUT", "nan"),
        ("GIGI_LLM_CALL_TIMEOUT", "-1"),
        ("GIGI_LLM_MAX_RESPONSE_BYTES", "1.5"),
        ("GIGI_LLM_MAX_RESPONSE_BYTES", "lots"),
    ],
)
def test_invalid_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        LlmSettings.from_env()
    assert name in str(caught.value) and repr(value) in str(caught.value)
