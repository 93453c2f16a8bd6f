"""Fixtures: a Gemini fake on loopback and a provider whose retry waits are recorded, not slept."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from gemini_fakes import API_KEY
from gigi_gemini import GeminiProvider

from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.testing.fake_providers import FakeGemini, RecordingSleep


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def http(sleeps: RecordingSleep) -> LlmHttpClient:
    return LlmHttpClient(retry=RetryPolicy(jitter=lambda: 1.0), sleep=sleeps)


@pytest.fixture
async def fake() -> AsyncIterator[FakeGemini]:
    async with FakeGemini(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def gemini(http: LlmHttpClient) -> GeminiProvider:
    return GeminiProvider(http=http)
