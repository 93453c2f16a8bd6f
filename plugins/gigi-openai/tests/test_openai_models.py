"""Model discovery on the OpenAI wire format: ``GET {base}/models`` on the wire-level fakes."""

from __future__ import annotations

import pytest

from gigi_core.llm import ProviderError


async def test_openai_lists_the_models_the_key_can_call(fake, openai) -> None:
    fake.models = ["gpt-4o", "o3-mini"]
    models = await openai.list_models(api_key="sk-test", base_url=fake.base_url)
    assert [m.id for m in models] == ["gpt-4o", "o3-mini"]
    request = fake.requests_to("models")[0]
    assert request.method == "GET" and request.path == "/v1/models"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == b""


async def test_a_compatible_server_lists_under_its_own_base_url(fake, compatible) -> None:
    fake.models = ["llama3:8b"]
    models = await compatible.list_models(api_key="sk-test", base_url=fake.base_url)
    assert [m.id for m in models] == ["llama3:8b"]


async def test_openrouter_models_keep_their_context_and_output_facts(router, openrouter) -> None:
    router.reply_raw(
        200,
        route="models",
        json={
            "data": [
                {
                    "id": "x-ai/grok-4",
                    "name": "Grok 4",
                    "context_length": 256000,
                    "top_provider": {"max_completion_tokens": 32000},
                    "architecture": {"output_modalities": ["text"]},
                },
                {"name": "no id: skipped"},
            ]
        },
    )
    [model] = await openrouter.list_models(api_key="or-test", base_url=router.base_url)
    assert (model.id, model.display_name, model.context_window, model.output_limit) == (
        "x-ai/grok-4",
        "Grok 4",
        256000,
        32000,
    )
    assert model.kinds == ("text",)
    assert router.last_request.path == "/api/v1/models"


async def test_a_wrong_key_is_an_auth_error_in_the_providers_words(fake, openai) -> None:
    with pytest.raises(ProviderError) as caught:
        await openai.list_models(api_key="sk-wrong", base_url=fake.base_url)
    assert caught.value.error_class == "auth"
    assert "Incorrect API key" in caught.value.provider_message


async def test_a_reply_without_data_is_an_invalid_response(fake, openai) -> None:
    fake.reply_raw(200, route="models", json={"object": "list"})
    with pytest.raises(ProviderError) as caught:
        await openai.list_models(api_key="sk-test", base_url=fake.base_url)
    assert caught.value.error_class == "invalid_response"
