"""The distribution's entry point registers ``anthropic`` through pluggy."""

from __future__ import annotations

from gigi_anthropic import ANTHROPIC_BASE_URL, AnthropicProvider

from gigi_core.llm import Provider
from gigi_core.testing import load_test_plugins


def test_entry_point_registers_the_anthropic_provider() -> None:
    loaded = load_test_plugins(["anthropic"])
    record = loaded.registry.records["anthropic"]
    assert record.status == "ok", record.error
    assert record.source == "entrypoint" and record.distribution == "gigi-anthropic"
    assert record.as_dict()["providers"] == ["anthropic"]
    provider = loaded.registry.provider("anthropic")  # registered lazily, built here
    assert isinstance(provider, AnthropicProvider) and isinstance(provider, Provider)
    described = provider.describe()
    assert described["default_base_url"] == ANTHROPIC_BASE_URL
    assert described["supports"] == {
        "tools": True,
        "structured_output": True,
        "embeddings": False,
        "images": True,
        "reasoning": True,
        "image_generation": False,
    }
