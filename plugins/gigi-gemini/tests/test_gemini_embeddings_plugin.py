"""Embeddings over batchEmbedContents, and registration through the entry point."""

from __future__ import annotations

import pytest
from gemini_fakes import API_KEY, SizedFakeGemini
from gigi_gemini import GeminiProvider

from gigi_core.llm import EmbeddingRequest, Provider, ProviderError
from gigi_core.testing import load_test_plugins
from gigi_core.testing.fake_providers import FakeGemini, fake_vector

TEXTS = ["first", "second", "third"]


async def test_embeddings_keep_order_and_requested_dimension(gemini: GeminiProvider) -> None:
    async with SizedFakeGemini(api_key=API_KEY) as fake:
        request = EmbeddingRequest(
            model="gemini-embedding-001", inputs=TEXTS, dimensions=16, purpose="query"
        )
        response = await gemini.embed(request, api_key=API_KEY, base_url=fake.base_url)
        sent = fake.last_request
    assert response.vectors == [fake_vector(t, 16) for t in TEXTS]
    assert response.dimension == 16 and response.provider == "gemini"
    assert sent.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert sent.headers["x-goog-api-key"] == API_KEY and sent.query == {}
    assert sent.json["requests"][1] == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "second"}]},
        "taskType": "RETRIEVAL_QUERY",
        "outputDimensionality": 16,
    }


async def test_embeddings_default_dimension(gemini: GeminiProvider, fake: FakeGemini) -> None:
    request = EmbeddingRequest(model="gemini-embedding-001", inputs=TEXTS, purpose="document")
    response = await gemini.embed(request, api_key=API_KEY, base_url=fake.base_url)
    assert response.dimension == 8 and len(response.vectors) == 3
    entry = fake.last_request.json["requests"][0]
    assert entry["taskType"] == "RETRIEVAL_DOCUMENT" and "outputDimensionality" not in entry


async def test_ignored_dimension_is_an_invalid_response(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    request = EmbeddingRequest(model="text-embedding-004", inputs=TEXTS, dimensions=4)
    with pytest.raises(ProviderError) as info:
        await gemini.embed(request, api_key=API_KEY, base_url=fake.base_url)
    assert info.value.error_class == "invalid_response" and "4 dimensions" in str(info.value)


async def test_missing_vectors_are_an_invalid_response(
    gemini: GeminiProvider, fake: FakeGemini
) -> None:
    fake.reply_raw(200, json={"embeddings": [{"values": [0.1, 0.2]}]}, route="embeddings")
    request = EmbeddingRequest(model="gemini-embedding-001", inputs=TEXTS)
    with pytest.raises(ProviderError) as info:
        await gemini.embed(request, api_key=API_KEY, base_url=fake.base_url)
    assert "expected 3 embeddings, got 1" in str(info.value)


def test_entry_point_registers_the_gemini_provider() -> None:
    loaded = load_test_plugins(["gemini"])
    record = loaded.registry.records["gemini"]
    assert record.status == "ok", record.error
    assert record.source == "entrypoint" and record.distribution == "gigi-gemini"
    provider = loaded.registry.provider("gemini")  # registered lazily, built here
    assert isinstance(provider, Provider) and isinstance(provider, GeminiProvider)
    assert set(loaded.registry.providers) == {"gemini"}
    assert provider.supports.embeddings and provider.supports.reasoning
    assert provider.describe()["default_base_url"] == "https://generativelanguage.googleapis.com"
