"""Model discovery on Gemini: ``GET /v1beta/models`` followed page by page (``pageToken``)."""

from __future__ import annotations

import pytest
from gemini_fakes import API_KEY

from gigi_core.llm import ProviderError


async def test_every_page_is_read_and_ids_lose_their_prefix(fake, gemini) -> None:
    fake.models = ["gemini-2.5-flash", "gemini-2.5-pro", "text-embedding-004"]
    fake.models_page_size = 2
    models = await gemini.list_models(api_key=API_KEY, base_url=fake.base_url)
    assert [m.id for m in models] == ["gemini-2.5-flash", "gemini-2.5-pro", "text-embedding-004"]
    pages = fake.requests_to("models")
    assert [p.query.get("pageToken") for p in pages] == [None, ["p2"]]
    assert all(p.path == "/v1beta/models" for p in pages)
    assert pages[0].headers["x-goog-api-key"] == API_KEY
    assert "key" not in pages[0].query  # the key never travels in the URL
    assert models[0].kinds == ("chat",) and models[2].kinds == ("embeddings",)
    assert models[0].context_window == 1_048_576


async def test_a_wrong_key_is_an_error_naming_the_provider(fake, gemini) -> None:
    with pytest.raises(ProviderError) as caught:
        await gemini.list_models(api_key="AIza-wrong", base_url=fake.base_url)
    assert caught.value.provider == "gemini"
    assert caught.value.error_class in ("auth", "bad_request", "permission")
