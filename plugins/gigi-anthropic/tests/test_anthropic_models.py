"""Model discovery on Anthropic: ``GET /v1/models`` followed page by page (``after_id``)."""

from __future__ import annotations

import pytest
from anthropic_fake_extras import API_KEY

from gigi_core.llm import ProviderError


async def test_every_page_is_read_in_order(fake, anthropic) -> None:
    fake.models = ["claude-a", "claude-b", "claude-c", "claude-d", "claude-e"]
    fake.models_page_size = 2
    models = await anthropic.list_models(api_key=API_KEY, base_url=fake.base_url)
    assert [m.id for m in models] == ["claude-a", "claude-b", "claude-c", "claude-d", "claude-e"]
    pages = fake.requests_to("models")
    assert len(pages) == 3
    assert [p.query.get("after_id") for p in pages] == [None, ["claude-b"], ["claude-d"]]
    assert pages[0].headers["x-api-key"] == API_KEY
    assert pages[0].headers["anthropic-version"]
    assert models[0].display_name == "Claude A"


async def test_a_base_url_ending_in_v1_is_accepted(fake, anthropic) -> None:
    models = await anthropic.list_models(api_key=API_KEY, base_url=fake.base_url + "/v1")
    assert fake.last_request.path == "/v1/models"
    assert models


async def test_a_server_that_never_stops_paging_is_cut_off(fake, anthropic) -> None:
    endless = {"data": [{"id": "x"}], "has_more": True, "last_id": None}

    def pages(request):  # a new last_id every time: never repeats, never ends
        from gigi_core.testing.fake_providers import Reply

        return Reply(200, {**endless, "last_id": f"id-{len(fake.requests)}"})

    fake.respond_with(pages)
    with pytest.raises(ProviderError) as caught:
        await anthropic.list_models(api_key=API_KEY, base_url=fake.base_url)
    assert caught.value.error_class == "invalid_response"
    assert "did not end" in caught.value.provider_message


async def test_overloaded_models_endpoint_is_a_classified_error(fake, anthropic) -> None:
    fake.reply_overloaded(times=4)
    with pytest.raises(ProviderError) as caught:
        await anthropic.list_models(api_key=API_KEY, base_url=fake.base_url)
    assert caught.value.error_class == "overloaded"
