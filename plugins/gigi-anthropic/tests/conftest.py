"""Fixtures: a FakeAnthropic on loopback and a provider whose retry waits are recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from anthropic_fake_extras import API_KEY
from gigi_anthropic import AnthropicProvider

from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.testing.fake_providers import FakeAnthropic, RecordingSleep


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def http(sleeps: RecordingSleep) -> LlmHttpClient:
    return LlmHttpClient(retry=RetryPolicy(jitter=lambda: 1.0), sleep=sleeps)


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def anthropic(http: LlmHttpClient) -> AnthropicProvider:
    return AnthropicProvider(http=http)
