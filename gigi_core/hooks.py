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

    def _impls(self, hook: str) -> list[Any]:
        return list(reversed(getattr(self.pm.hook, hook).get_hookimpls()))

    async def call_all(self, hook: str, **kwargs: Any) -> list[Any]:
        """Every result; an exception propagates (callers that must fail closed rely on it)."""
        results = []
        for impl in self._impls(hook):
            result = impl.function(**{a: kwargs[a] for a in impl.argnames})
            if inspect.isawaitable(result):
                result = await result
            results.append(result)
        return results

    async def notify(self, hook: str, **kwargs: Any) -> None:
        """Observer hooks: one failing plugin is logged and does not stop the others."""
        for impl in self._impls(hook):
            try:
                result = impl.function(**{a: kwargs[a] for a in impl.argnames})
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("plugin %s failed in %s", impl.plugin_name, hook)

    async def first(self, hook: str, **kwargs: Any) -> Any:
        for impl in self._impls(hook):
            result = impl.function(**{a: kwargs[a] for a in impl.argnames})
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return result
        return None
