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


def lazy_exports(module: str, exports: dict[str, str]) -> Any:
    """A module ``__getattr__`` that imports each re-exported name from its module on first use.

    Plugin packages use it so ``import gigi_openai`` (done by every CLI start) stays cheap.
    """

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(source), name)

    return __getattr__
