"""Fixtures: fake servers on loopback and providers whose retry waits are recorded, not slept."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from gigi_openai import OpenAICompatibleProvider, OpenAIProvider, OpenRouterProvider

from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.testing.fake_providers import FakeOpenAI, FakeOpenRouter, RecordingSleep


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def http(sleeps: RecordingSleep) -> LlmHttpClient:
    return LlmHttpClient(retry=RetryPolicy(jitter=lambda: 1.0), sleep=sleeps)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test") as server:
        yield server


@pytest.fixture
async def router() -> AsyncIterator[FakeOpenRouter]:
    async with FakeOpenRouter(api_key="or-test") as server:
        yield server


@pytest.fixture
def openai(http: LlmHttpClient) -> OpenAIProvider:
    return OpenAIProvider(http=http, api="chat")


@pytest.fixture
def openrouter(http: LlmHttpClient) -> OpenRouterProvider:
    return OpenRouterProvider(http=http)


@pytest.fixture
def compatible(http: LlmHttpClient) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(http=http)
