"""Failures as a user sees them: Gemini's own words, RetryInfo, the retry budget, the key kept out."""

from __future__ import annotations

import socket

import pytest
from gemini_fakes import API_KEY
from gigi_gemini import GeminiProvider

from gigi_core.llm import ChatRequest, ProviderError, UserMessage
from gigi_core.testing.fake_providers import FakeGemini, RecordingSleep

REQUEST = ChatRequest(model="gemini-2.5-flash", messages=[UserMessage(content="hi")])
QUOTA = (
    "You exceeded your current quota, please check your plan and billing details. "
    "Quota exceeded for metric: generate_content_free_tier_requests, limit: 0"
)


async def _chat(gemini: GeminiProvider, fake: FakeGemini, key: str = API_KEY):
    return await gemini.chat(REQUEST, api_key=key, base_url=fake.base_url)


async def test_400_message_is_verbatim_and_not_retried(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    text = "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty."
    fake.reply_error(400, text)
    with pytest.raises(ProviderError) as info:
        await _chat(gemini, fake)
    err = info.value
    assert err.provider_message == text and text in str(err)
    assert (err.status, err.error_class, err.provider) == (400, "bad_request", "gemini")
    assert err.code == "INVALID_ARGUMENT" and err.request_id == "req_fake_1"
    assert not err.retryable and len(fake.requests) == 1


@pytest.mark.parametrize(
    ("status", "error_class", "message"),
    [
        (403, "permission", "Generative Language API has not been used in project 123."),
        (
            404,
            "not_found",
            "models/gemini-9-ultra is not found for API version v1beta, "
            "or is not supported for generateContent.",
        ),
    ],
)
async def test_403_and_404_are_not_retried(
    gemini: GeminiProvider,
    fake: FakeGemini,
    sleeps: RecordingSleep,
    status: int,
    error_class: str,
    message: str,
) -> None:
    fake.reply_error(status, message, times=2)
    with pytest.raises(ProviderError) as info:
        await _chat(gemini, fake)
    assert info.value.error_class == error_class and info.value.provider_message == message
    assert len(fake.requests) == 1 and sleeps.waits == []


async def test_key_is_a_header_never_in_the_url_or_errors(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    wrong = "AIza-wrong-key-9876"
    with pytest.raises(ProviderError) as info:
        await _chat(gemini, fake, key=wrong)
    assert info.value.error_class == "auth" and len(fake.requests) == 1
    sent = fake.last_request
    assert sent.headers["x-goog-api-key"] == wrong and sent.query == {}
    assert wrong not in sent.path and wrong not in str(info.value)
    assert wrong not in repr(info.value.to_dict())


async def test_unreachable_host_error_does_not_leak_the_key(
    gemini: GeminiProvider, sleeps: RecordingSleep
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ProviderError) as info:
        await gemini.chat(REQUEST, api_key=API_KEY, base_url=f"http://127.0.0.1:{port}")
    assert info.value.error_class == "network" and info.value.attempts == 4
    assert API_KEY not in str(info.value) and "generateContent" in str(info.value)


async def test_429_with_retry_info_then_200(
    gemini: GeminiProvider, fake: FakeGemini, sleeps: RecordingSleep
) -> None:
    fake.reply_rate_limited(retry_delay="46s")
    fake.reply_text("after the wait")
    response = await _chat(gemini, fake)
    assert response.text == "after the wait"
    assert sleeps.waits == [46.0] and len(fake.requests) == 2


async def test_retry_info_above_the_cap_fails_fast_with_gemini_message(
    gemini: GeminiProvider, fake: FakeGemini, sleeps: RecordingSleep
) -> None:
    fake.reply_rate_limited(retry_delay="43200s", message=QUOTA)
    fake.reply_text("never reached")
    with pytest.raises(ProviderError) as info:
        await _chat(gemini, fake)
    err = info.value
    assert err.provider_message == QUOTA and err.error_class == "rate_limited"
    assert err.retry_after == 43200.0 and not err.retryable and err.attempts == 1
    assert err.hint and "43200s" in err.hint
    assert sleeps.waits == [] and len(fake.requests) == 1


async def test_503_unavailable_is_retried(
    gemini: GeminiProvider, fake: FakeGemini, sleeps: RecordingSleep
) -> None:
    fake.reply_error(503, "The model is overloaded. Please try again later.")
    fake.reply_text("ok")
    response = await _chat(gemini, fake)
    assert response.text == "ok" and len(sleeps.waits) == 1 and len(fake.requests) == 2


async def test_four_500s_exhaust_the_budget(
    gemini: GeminiProvider, fake: FakeGemini, sleeps: RecordingSleep
) -> None:
    fake.reply_server_error(500, times=4)
    fake.reply_text("never reached")
    with pytest.raises(ProviderError) as info:
        await _chat(gemini, fake)
    err = info.value
    assert err.status == 500 and err.error_class == "server" and err.attempts == 4
    assert err.provider_message == "fake upstream error 500"
    assert len(fake.requests) == 4 and len(sleeps.waits) == 3
