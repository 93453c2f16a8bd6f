"""Calling runtime hooks: each implementation isolated, async implementations awaited."""

from __future__ import annotations

import inspect
import logging
from typing import Any

import pluggy

log = logging.getLogger(__name__)


class HookRunner:
    """Runs a hook's implementations in pluggy's order and awaits coroutines."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm

    def _impls(self, name: str) -> list[Any]:
        return list(reversed(getattr(self.pm.hook, name).get_hookimpls()))

    async def call_all(self, name: str, **kwargs: Any) -> list[Any]:
        """Every result; an exception propagates (callers that must fail closed rely on it)."""
        results = []
        for impl in self._impls(name):
            result = impl.function(**{a: kwargs[a] for a in impl.argnames})
            if inspect.isawaitable(result):
                result = await result
            results.append(result)
        return results

    async def notify(self, name: str, **kwargs: Any) -> None:
        """Observer hooks: one failing plugin is logged and does not stop the others."""
        for impl in self._impls(name):
            try:
                result = impl.function(**{a: kwargs[a] for a in impl.argnames})
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("plugin %s failed in %s", impl.plugin_name, name)

    async def first(self, name: str, **kwargs: Any) -> Any:
        for impl in self._impls(name):
            result = impl.function(**{a: kwargs[a] for a in impl.argnames})
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return result
        return None
