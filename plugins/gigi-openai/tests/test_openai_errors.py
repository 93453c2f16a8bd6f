"""Failures as a provider user sees them: verbatim text, retries, budgets, error classes."""

from __future__ import annotations

import time

import pytest
from gigi_openai import OpenAICompatibleProvider, OpenAIProvider, OpenRouterProvider

from gigi_core.llm import ChatRequest, LlmHttpClient, ProviderError, UserMessage
from gigi_core.testing.fake_providers import FakeOpenAI, FakeOpenRouter, RecordingSleep

REQUEST = ChatRequest(model="gpt-x", messages=[UserMessage(content="hi")])


async def test_400_body_is_verbatim_in_the_error(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    text = "Web search options not supported with this model."
    fake.reply_error(400, text, param="web_search_options")
    with pytest.raises(ProviderError) as info:
        await openai.chat(REQUEST, api_key="sk-test", base_url=fake.base_url)
    err = info.value
    assert err.provider_message == text and text in str(err)
    assert err.status == 400 and err.error_class == "bad_request" and err.provider == "openai"
    assert err.request_id == "req_fake_1" and len(fake.requests) == 1


async def test_unknown_model_surfaces_the_provider_text(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    router.reply_error(400, "x-ai/grok-99 is not a valid model ID")
    request = REQUEST.model_copy(update={"model": "openrouter/x-ai/grok-99"})
    with pytest.raises(ProviderError) as info:
        await openrouter.chat(request, api_key="or-test", base_url=router.base_url)
    assert "x-ai/grok-99 is not a valid model ID" in str(info.value)


async def test_wrong_key_is_401_verbatim_and_not_retried(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    with pytest.raises(ProviderError) as info:
        await openai.chat(REQUEST, api_key="sk-wrong", base_url=fake.base_url)
    assert info.value.error_class == "auth" and "Incorrect API key" in str(info.value)
    assert len(fake.requests) == 1
    assert "sk-wrong" not in str(info.value)


async def test_429_then_200_succeeds_after_the_hinted_delay(
    openai: OpenAIProvider, fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_rate_limited(retry_after=3)
    fake.reply_text("after the wait")
    response = await openai.chat(REQUEST, api_key="sk-test", base_url=fake.base_url)
    assert response.text == "after the wait" and sleeps.waits == [3.0]
    assert len(fake.requests) == 2


async def test_429_then_200_really_waits_for_a_tiny_hint(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider(http=LlmHttpClient(), api="chat")
    fake.reply_rate_limited(retry_after_ms=100)
    fake.reply_text("ok")
    started = time.monotonic()
    response = await provider.chat(REQUEST, api_key="sk-test", base_url=fake.base_url)
    assert response.text == "ok" and time.monotonic() - started >= 0.1


async def test_four_500s_exhaust_the_budget_and_raise(
    openai: OpenAIProvider, fake: FakeOpenAI, sleeps: RecordingSleep
) -> None:
    fake.reply_server_error(500, times=4)
    with pytest.raises(ProviderError) as info:
        await openai.chat(REQUEST, api_key="sk-test", base_url=fake.base_url)
    assert info.value.status == 500 and info.value.attempts == 4
    assert len(fake.requests) == 4 and len(sleeps.waits) == 3


async def test_html_error_page_is_stripped(openai: OpenAIProvider, fake: FakeOpenAI) -> None:
    fake.reply_html(502, times=4)
    with pytest.raises(ProviderError) as info:
        await openai.chat(REQUEST, api_key="sk-test", base_url=fake.base_url)
    message = info.value.provider_message
    assert "502 Bad Gateway" in message and "<html" not in message and "<center>" not in message


async def test_openrouter_upstream_error_surfaces_metadata_raw(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    raw = "google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream. Please retry."
    router.reply_upstream_error(402, raw)
    with pytest.raises(ProviderError) as info:
        await openrouter.chat(REQUEST, api_key="or-test", base_url=router.base_url)
    assert raw in info.value.provider_message and info.value.error_class == "credit"
    assert len(router.requests) == 1


async def test_openrouter_200_with_error_body_raises_with_raw(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    router.reply_error_in_body(400, "Provider returned error", raw="context length exceeded")
    with pytest.raises(ProviderError) as info:
        await openrouter.chat(REQUEST, api_key="or-test", base_url=router.base_url)
    assert "context length exceeded" in info.value.provider_message
    assert info.value.status == 400 and not info.value.retryable


async def test_missing_choices_without_error_is_an_invalid_response(
    openai: OpenAIProvider, fake: FakeOpenAI
) -> None:
    fake.reply_no_choices()
    with pytest.raises(ProviderError) as info:
        await openai.chat(REQUEST, api_key="sk-test", base_url=fake.base_url)
    assert info.value.error_class == "invalid_response"


async def test_choice_level_error_is_raised(
    openrouter: OpenRouterProvider, router: FakeOpenRouter
) -> None:
    router.reply_chat(
        {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "error",
                    "error": {"message": "upstream died"},
                    "message": {"role": "assistant", "content": ""},
                }
            ]
        }
    )
    with pytest.raises(ProviderError) as info:
        await openrouter.chat(REQUEST, api_key="or-test", base_url=router.base_url)
    assert "upstream died" in str(info.value)


async def test_compatible_without_base_url_is_a_clear_config_error(
    compatible: OpenAICompatibleProvider,
) -> None:
    with pytest.raises(ProviderError) as info:
        await compatible.chat(REQUEST, api_key="k")
    assert info.value.error_class == "config" and "base URL" in str(info.value)


async def test_timeout_surfaces_as_timeout(sleeps: RecordingSleep, fake: FakeOpenAI) -> None:
    from gigi_core.llm import RetryPolicy

    http = LlmHttpClient(retry=RetryPolicy(max_attempts=2), sleep=sleeps)
    provider = OpenAIProvider(http=http, api="chat")
    fake.reply_timeout(delay=1.0, times=2)
    request = REQUEST.model_copy(update={"timeout": 0.1})
    with pytest.raises(ProviderError) as info:
        await provider.chat(request, api_key="sk-test", base_url=fake.base_url)
    assert info.value.error_class == "timeout" and len(sleeps.waits) == 1
