"""Calling runtime hooks: each implementation isolated, async implementations awaited.

Every hook call has a deadline (``GIGI_HOOK_TIMEOUT_SECONDS`` for every kind, or
``GIGI_HOOK_TIMEOUT_<HOOK>_SECONDS`` for one, e.g. ``GIGI_HOOK_TIMEOUT_STARTUP_SECONDS``;
``0`` means none). An async implementation that runs past it is cancelled and reported as
a :class:`HookTimeout`: callers that must fail closed (vetoes, capabilities) get it raised,
observer hooks log it and go on. A synchronous implementation runs on the event loop and
cannot be interrupted: a plugin with slow work makes that hook ``async``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import math
import os
from collections.abc import Mapping
from typing import Any, NoReturn

import pluggy

from gigi_core.errors import ConfigError

log = logging.getLogger(__name__)

#: Built-in deadlines per hook kind, in seconds; any other hook gets ``FALLBACK_SECONDS``.
DEFAULT_SECONDS: dict[str, float] = {
    "startup": 30.0,
    "shutdown": 10.0,
    "actor_from_event": 5.0,
    "capabilities_for": 5.0,
    "check_tool_call": 5.0,
    "after_tool_call": 5.0,
    "track_event": 2.0,
}
FALLBACK_SECONDS = 10.0
ALL_KINDS_VAR = "GIGI_HOOK_TIMEOUT_SECONDS"


def hook_var(hook: str) -> str:
    return f"GIGI_HOOK_TIMEOUT_{hook.upper()}_SECONDS"


def _seconds(var: str) -> float | None:
    raw = os.environ.get(var)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{var}: {raw!r} is not a number of seconds (0 for no deadline)")
    return value


class HookDeadlines:
    """Seconds per hook kind, read once from the environment (a bad value is a ConfigError)."""

    def __init__(self, overrides: Mapping[str, float] | None = None) -> None:
        every = _seconds(ALL_KINDS_VAR)
        self._all = every
        self._seconds: dict[str, float | None] = {}
        for hook, default in DEFAULT_SECONDS.items():
            own = _seconds(hook_var(hook))
            self._seconds[hook] = _none_if_zero(
                own if own is not None else every if every is not None else default
            )
        for hook, value in (overrides or {}).items():
            self._seconds[hook] = _none_if_zero(value)

    def __call__(self, hook: str) -> float | None:
        """The deadline of one call of ``hook``, or None for none."""
        if hook not in self._seconds:
            own = _seconds(hook_var(hook))
            fallback = self._all if self._all is not None else FALLBACK_SECONDS
            self._seconds[hook] = _none_if_zero(own if own is not None else fallback)
        return self._seconds[hook]


def _none_if_zero(value: float) -> float | None:
    return None if value == 0 else value


class HookTimeout(TimeoutError):
    """A plugin's hook implementation did not finish within its deadline."""

    def __init__(self, hook: str, plugin: str, seconds: float) -> None:
        super().__init__(f"plugin {plugin}: {hook} did not finish within {seconds:g}s")
        self.hook = hook
        self.plugin = plugin
        self.seconds = seconds


class HookRunner:
    """Runs a hook's implementations in pluggy's order, awaits coroutines, enforces deadlines."""

    def __init__(self, pm: pluggy.PluginManager, deadlines: HookDeadlines | None = None) -> None:
        self.pm = pm
        self.deadlines = deadlines or HookDeadlines()
        self._cached: dict[str, tuple[Any, ...]] = {}
        self._generation: int | None = None

    def _impls(self, hook: str) -> tuple[Any, ...]:
        """The hook's implementations in call order, kept until the manager next changes.

        ``gigi_core.plugins.PluginManager`` counts every register/unregister; a plain
        pluggy manager (no ``generation``) is asked every time.
        """
        generation = getattr(self.pm, "generation", None)
        if generation is None:
            return tuple(reversed(getattr(self.pm.hook, hook).get_hookimpls()))
        if generation != self._generation:
            self._cached.clear()
            self._generation = generation
        found = self._cached.get(hook)
        if found is None:
            found = self._cached[hook] = tuple(
                reversed(getattr(self.pm.hook, hook).get_hookimpls())
            )
        return found

    def implemented(self, hook: str) -> bool:
        """Whether any plugin implements ``hook`` (a caller can skip building its arguments)."""
        return bool(self._impls(hook))

    async def _call(self, hook: str, impl: Any, kwargs: dict[str, Any]) -> Any:
        result = impl.function(**{a: kwargs[a] for a in impl.argnames})
        if not inspect.isawaitable(result):
            return result
        seconds = self.deadlines(hook)
        if seconds is None:
            return await result
        try:
            async with asyncio.timeout(seconds):
                return await result
        except TimeoutError:
            raise HookTimeout(hook, impl.plugin_name, seconds) from None

    async def call_all(self, hook: str, **kwargs: Any) -> list[Any]:
        """Every result; an exception or a HookTimeout propagates (callers fail closed on it)."""
        return [await self._call(hook, impl, kwargs) for impl in self._impls(hook)]

    async def notify(self, hook: str, **kwargs: Any) -> list[HookTimeout]:
        """Observer hooks: one failing or hanging plugin is logged and does not stop the others.

        Returns the implementations that ran past their deadline (``Kernel.open`` marks a
        plugin whose ``startup`` timed out as failed).
        """
        timed_out = []
        for impl in self._impls(hook):
            try:
                await self._call(hook, impl, kwargs)
            except HookTimeout as exc:
                log.error("%s; it was cancelled", exc)
                timed_out.append(exc)
            except Exception as exc:  # the class only: the message could quote what it was given
                log.error("plugin %s failed in %s: %s", impl.plugin_name, hook, type(exc).__name__)
        return timed_out

    async def first(self, hook: str, **kwargs: Any) -> Any:
        for impl in self._impls(hook):
            result = await self._call(hook, impl, kwargs)
            if result is not None:
                return result
        return None


# -- read-only views for hooks ------------------------------------------------------------


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError("this is a read-only copy; copy.deepcopy() it to get one you can change")


class ReadOnlyDict(dict):  # type: ignore[type-arg]
    """A dict that refuses changes; ``json.dumps`` and ``==`` treat it as the dict it is."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


class ReadOnlyList(list):  # type: ignore[type-arg]
    """A list that refuses changes."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse  # type: ignore[assignment]

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> Any:
        return (list, (list(self),))


def read_only(value: Any) -> Any:
    """A deep copy of JSON-like data that refuses changes (what ``check_tool_call`` gets).

    The copy is separate from the original, so not even ``dict.__setitem__(copy, ...)``
    reaches the arguments that are executed afterwards.
    """
    if isinstance(value, dict):
        return ReadOnlyDict((k, read_only(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return ReadOnlyList(read_only(v) for v in value)
    return value
