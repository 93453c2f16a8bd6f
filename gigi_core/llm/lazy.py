"""Providers registered by import path, built on first use.

A provider module pulls in the typed request/response models (pydantic) and its wire
code; registering ``LazyProvider("anthropic", "gigi_anthropic.provider:AnthropicProvider")``
keeps that cost off commands that never call a model, such as ``gigi plugins list``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LazyProvider:
    """Stands in for a provider until ``load()``; the registry loads it on first lookup."""

    name: str
    target: str  # "package.module:ClassName"
    kwargs: dict[str, Any] = field(default_factory=dict)

    def load(self) -> Any:
        module, _, attr = self.target.partition(":")
        provider = getattr(importlib.import_module(module), attr)(**self.kwargs)
        if provider.name != self.name:
            raise ValueError(f"{self.target} builds provider {provider.name!r}, not {self.name!r}")
        return provider
