"""Routing free model strings, and registration through the entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

import pluggy
import pytest
from gigi_openai import (
    OPENAI_BASE_URL,
    OPENROUTER_BASE_URL,
    OpenAICompatibleProvider,
    OpenRouterProvider,
    resolve_route,
)

from gigi_core.llm import ChatRequest, LazyProvider, Provider, ProviderError, UserMessage
from gigi_core.testing.fake_providers import FakeOpenAI, FakeOpenRouter


def test_openrouter_prefix_routes_to_openrouter() -> None:
    route = resolve_route("openrouter/x-ai/grok-4.5")
    assert (route.provider, route.model_id, route.base_url) == (
        "openrouter",
        "x-ai/grok-4.5",
        OPENROUTER_BASE_URL,
    )


def test_plain_model_with_base_url_routes_to_compatible() -> None:
    route = resolve_route("llama3.2", base_url="http://localhost:11434/v1/")
    assert (route.provider, route.model_id, route.base_url) == (
        "openai-compatible",
        "llama3.2",
        "http://localhost:11434/v1",
    )
    assert (
        resolve_route("anthropic/claude-x", base_url="http://h/v1").model_id == "anthropic/claude-x"
    )


def test_openai_provider_needs_no_base_url() -> None:
    route = resolve_route("gpt-5", provider="openai")
    assert route.provider == "openai" and route.base_url == OPENAI_BASE_URL


@pytest.mark.parametrize("model", ["gpt-5", "anthropic/claude-sonnet-4", "openrouter/"])
def test_no_route_is_a_clear_error(model: str) -> None:
    with pytest.raises(ProviderError) as info:
        resolve_route(model)
    text = str(info.value)
    assert info.value.error_class == "config"
    assert "openrouter/<vendor>/<model>" in text and "base URL" in text


async def test_routes_reach_the_right_servers(
    openrouter: OpenRouterProvider, compatible: OpenAICompatibleProvider
) -> None:
    async with FakeOpenRouter() as router, FakeOpenAI() as local:
        router.reply_text("from router")
        local.reply_text("from local")
        providers = {"openrouter": openrouter, "openai-compatible": compatible}
        answers = []
        for model, base in (("openrouter/a/b", router.base_url), ("qwen3", local.base_url)):
            route = resolve_route(model, base_url=None if model.startswith("openrouter/") else base)
            request = ChatRequest(model=model, messages=[UserMessage(content="hi")])
            provider = providers[route.provider]
            answers.append((await provider.chat(request, api_key="k", base_url=base)).text)
        assert answers == ["from router", "from local"]
        assert router.last_request.json["model"] == "a/b"
        assert local.last_request.json["model"] == "qwen3"


def test_entry_point_registers_three_providers() -> None:
    (ep,) = [e for e in entry_points(group="gigi") if e.name == "openai"]
    module = ep.load()
    pm = pluggy.PluginManager("gigi")
    from gigi_core import hookspecs

    pm.add_hookspecs(hookspecs)
    pm.register(module)
    registered: list[Provider] = []
    pm.hook.register_providers(register=registered.append)
    assert all(isinstance(p, LazyProvider) for p in registered)  # nothing built at load time
    names = {p.name: p.load() for p in registered}
    assert set(names) == {"openai", "openrouter", "openai-compatible"}
    assert all(isinstance(p, Provider) for p in names.values())
    assert names["openai"].supports.embeddings and names["openrouter"].supports.reasoning
    assert names["openai-compatible"].requires_base_url
    assert names["openai"].describe()["default_base_url"] == OPENAI_BASE_URL
