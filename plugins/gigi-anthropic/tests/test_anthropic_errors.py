"""Failures as a provider user sees them: verbatim text, retries, spend limits, no key leaks."""

from __future__ import annotations

import pytest
from anthropic_fake_extras import API_KEY
from gigi_anthropic import AnthropicProvider

from gigi_core.llm import ChatRequest, EmbeddingRequest, ProviderError, UserMessage
from gigi_core.testing.fake_providers import FakeAnthropic, RecordingSleep

REQUEST = ChatRequest(model="claude-x", messages=[UserMessage(content="hi")])


async def _chat(provider: AnthropicProvider, fake: FakeAnthropic, key: str = API_KEY):
    return await provider.chat(REQUEST, api_key=key, base_url=fake.base_url)


async def test_400_body_is_verbatim_in_the_error(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    text = "This model does not support effort level 'xhigh'. Supported levels: low, medium, high."
    fake.reply_error(400, text)
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake)
    err = info.value
    assert err.provider_message == text and text in str(err)
    assert err.status == 400 and err.error_class == "bad_request" and err.provider == "anthropic"
    assert err.code == "invalid_request_error" and not err.retryable
    assert len(fake.requests) == 1


async def test_unknown_model_surfaces_the_provider_text(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_error(404, "model: claude-nope")
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake)
    assert info.value.error_class == "not_found" and "model: claude-nope" in str(info.value)


async def test_request_id_header_is_kept(anthropic: AnthropicProvider, fake: FakeAnthropic) -> None:
    fake.reply_error(400, "bad", headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake)
    assert info.value.request_id == "req_011CSHoEeqs5C35K2UUqR7Fy"


async def test_wrong_key_is_401_not_retried_and_never_shown(
    anthropic: AnthropicProvider, fake: FakeAnthropic, sleeps: RecordingSleep
) -> None:
    wrong = "sk-ant-wrong-secret-987654"
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake, key=wrong)
    err = info.value
    assert err.error_class == "auth" and err.status == 401 and not err.retryable
    assert "Incorrect API key" in str(err)
    assert len(fake.requests) == 1 and sleeps.waits == []
    for text in (str(err), repr(err), err.provider_message, str(err.to_dict())):
        assert wrong not in text and API_KEY not in text


async def test_429_then_200_succeeds_after_the_hinted_delay(
    anthropic: AnthropicProvider, fake: FakeAnthropic, sleeps: RecordingSleep
) -> None:
    fake.reply_rate_limited(retry_after=3)
    fake.reply_text("after the wait")
    response = await _chat(anthropic, fake)
    assert response.text == "after the wait" and sleeps.waits == [3.0]
    assert len(fake.requests) == 2


async def test_529_overloaded_is_retried(
    anthropic: AnthropicProvider, fake: FakeAnthropic, sleeps: RecordingSleep
) -> None:
    fake.reply_overloaded(times=2)
    fake.reply_text("finally")
    response = await _chat(anthropic, fake)
    assert response.text == "finally" and len(fake.requests) == 3 and len(sleeps.waits) == 2


async def test_529_exhausting_the_budget_is_overloaded(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_overloaded(times=4)
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake)
    assert info.value.error_class == "overloaded" and info.value.provider_message == "Overloaded"
    assert info.value.attempts == 4


async def test_spend_limit_429_is_not_retried(
    anthropic: AnthropicProvider, fake: FakeAnthropic, sleeps: RecordingSleep
) -> None:
    fake.reply_spend_limit()
    fake.reply_text("must not be reached")
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake)
    err = info.value
    assert err.status == 429 and err.error_class == "credit" and not err.retryable
    assert "workspace API usage limits" in err.provider_message
    assert len(fake.requests) == 1 and sleeps.waits == [] and fake.pending() == 1


async def test_four_500s_exhaust_the_budget_and_raise(
    anthropic: AnthropicProvider, fake: FakeAnthropic, sleeps: RecordingSleep
) -> None:
    fake.reply_server_error(500, times=4)
    with pytest.raises(ProviderError) as info:
        await _chat(anthropic, fake)
    assert info.value.status == 500 and info.value.attempts == 4
    assert info.value.error_class == "server"
    assert len(fake.requests) == 4 and len(sleeps.waits) == 3


async def test_x_should_retry_false_is_honoured(
    anthropic: AnthropicProvider, fake: FakeAnthropic
) -> None:
    fake.reply_error(500, "do not retry", headers={"x-should-retry": "false"})
    with pytest.raises(ProviderError):
        await _chat(anthropic, fake)
    assert len(fake.requests) == 1


async def test_embeddings_are_unsupported(anthropic: AnthropicProvider) -> None:
    assert anthropic.supports.embeddings is False
    with pytest.raises(ProviderError) as info:
        await anthropic.embed(EmbeddingRequest(model="m", inputs=["x"]), api_key=API_KEY)
    assert info.value.error_class == "unsupported"
