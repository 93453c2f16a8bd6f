"""Plugin loading: defaults first, then entry points, each isolated; failures are recorded, not fatal."""

from __future__ import annotations

import inspect
import logging
import os
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from gigi_core import hookspecs
from gigi_core.errors import GigiError, ManifestError, PluginError
from gigi_core.registry import Contributions, PluginRecord, Registry

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "gigi"
DEFAULT_PLUGINS: tuple[str, ...] = (
    "gigi_core.default_plugins.native_tools",
    "gigi_core.default_plugins.console",
)
REGISTRATION_HOOKS = (
    "register_manifests",
    "register_tools",
    "register_providers",
    "register_surfaces",
    "register_retrievers",
    "register_config_models",
    "register_migrations",
    "register_jobs",
)


@dataclass(frozen=True)
class LoadOptions:
    """Which plugins to load; read from GIGI_LOAD_PLUGINS / GIGI_BLOCK_PLUGINS / GIGI_STRICT_PLUGINS."""

    load: frozenset[str] | None = None
    block: frozenset[str] = frozenset()
    strict: bool = False
    defaults: tuple[str, ...] = DEFAULT_PLUGINS
    cache_dir: Path | None = None  # validated manifests on disk; None: in memory only

    @classmethod
    def from_env(cls, **overrides: Any) -> LoadOptions:
        def names(var: str) -> frozenset[str] | None:
            raw = os.environ.get(var)
            return (
                None if raw is None else frozenset(n.strip() for n in raw.split(",") if n.strip())
            )

        values: dict[str, Any] = {
            "load": names("GIGI_LOAD_PLUGINS"),
            "block": names("GIGI_BLOCK_PLUGINS") or frozenset(),
            "strict": os.environ.get("GIGI_STRICT_PLUGINS", "") not in ("", "0", "false"),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def wants(self, name: str) -> bool:
        return name not in self.block and (self.load is None or name in self.load)


@dataclass
class LoadedPlugins:
    pm: pluggy.PluginManager
    registry: Registry

    @property
    def failures(self) -> list[PluginRecord]:
        return [r for r in self.registry.records.values() if r.status == "failed"]


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, counting every change to who implements what.

    ``generation`` moves on every ``register``, ``unregister`` (``set_blocked`` goes through
    it too) and ``add_hookspecs``, even one that raised part-way, so
    :class:`gigi_core.hooks.HookRunner` can keep each hook's implementation list until the
    next change without any caller having to remember to clear it.
    """

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        self.generation = 0

    def register(self, plugin: object, name: str | None = None) -> str | None:
        try:
            return super().register(plugin, name)
        finally:
            self.generation += 1

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        try:
            return super().unregister(plugin, name)
        finally:
            self.generation += 1

    def add_hookspecs(self, module_or_class: object) -> None:
        try:
            super().add_hookspecs(module_or_class)
        finally:
            self.generation += 1


def new_plugin_manager() -> PluginManager:
    pm = PluginManager("gigi")
    pm.add_hookspecs(hookspecs)
    return pm


def load_plugins(
    options: LoadOptions | None = None,
    *,
    extra: Iterable[tuple[str, object]] = (),
    known_capabilities: Iterable[str] | None = None,
) -> LoadedPlugins:
    """Load every wanted plugin; ``extra`` adds in-process plugin objects (tests, embedding)."""
    from gigi_core.policy.capabilities import KERNEL_CAPABILITIES

    options = options or LoadOptions.from_env()
    pm = new_plugin_manager()
    registry = Registry()
    for cap in KERNEL_CAPABILITIES:
        registry.capabilities[cap.name] = cap
    known = set(known_capabilities or registry.capabilities)
    loader = _Loader(pm, registry, options, known)
    for module_name in options.defaults:
        name = module_name.rsplit(".", 1)[-1]
        if name not in options.block:  # defaults ignore the load list, like datasette's
            loader.load(name, lambda m=module_name: _import(m), "default", module_name)
    for ep in _entry_points():
        if options.wants(ep.name):
            dist = getattr(ep, "dist", None)
            meta = dist.metadata if dist else None  # parsed once: .name and .version each parse
            loader.load(
                ep.name,
                ep.load,
                "entrypoint",
                ep.value,
                distribution=meta["Name"] if meta else None,
                version=meta["Version"] if meta else None,
            )
    for name, plugin in extra:
        loader.load(name, lambda p=plugin: p, "inline", getattr(plugin, "__name__", repr(plugin)))
    _withdraw_command_clashes(pm, registry, options)
    return LoadedPlugins(pm, registry)


def _withdraw_command_clashes(
    pm: pluggy.PluginManager, registry: Registry, options: LoadOptions
) -> None:
    """Plugins whose commands clash or exceed surface limits fail, named; the rest keep theirs."""
    from gigi_core.commands.table import build_table

    _, problems = build_table(registry)
    for manifest_name, problem in problems.items():
        owner = registry.owner_of(manifest_name)
        if owner is None:
            continue
        log.warning("plugin %s failed to load: %s", owner.name, problem)
        if options.strict:
            raise PluginError(
                f"plugin {owner.name} failed to load: {problem}",
                hint="unset GIGI_STRICT_PLUGINS to skip broken plugins",
            )
        plugin = pm.get_plugin(owner.name)
        if plugin is not None:
            pm.unregister(plugin)
        registry.fail(owner.name, problem)


def _import(module_name: str) -> ModuleType:
    import importlib

    return importlib.import_module(module_name)


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    seen: set[str] = set()
    unique = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name not in seen:  # the same dist on sys.path twice
            seen.add(ep.name)
            unique.append(ep)
    return unique


class _Loader:
    def __init__(
        self, pm: pluggy.PluginManager, registry: Registry, options: LoadOptions, known: set[str]
    ) -> None:
        self.pm, self.registry, self.options, self.known = pm, registry, options, known
        from gigi_core.manifest.cache import ManifestCache

        self.cache = ManifestCache(options.cache_dir)  # the memory layer even without a folder

    def load(
        self,
        name: str,
        get: Callable[[], object],
        source: Any,
        module: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
    ) -> None:
        record = PluginRecord(name, module, source, distribution, version)
        plugin: object | None = None
        try:
            if name in self.registry.records:
                raise PluginError(f"a plugin named {name!r} is already loaded")
            plugin = get()
            self.pm.register(plugin, name=name)
            self._check_pending(plugin, name)
            record.contributions = self._collect(plugin, name)
            self._validate(record)
            if record.version is None and record.manifests:
                record.version = record.manifests[0].plugin.version
        except Exception as exc:
            record.status, record.error = "failed", _describe(exc)
            if plugin is not None and self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            log.warning("plugin %s failed to load: %s", name, record.error)
            if self.options.strict:
                raise PluginError(
                    f"plugin {name} failed to load: {record.error}",
                    hint="unset GIGI_STRICT_PLUGINS to skip broken plugins",
                ) from exc
            self.registry.records[name] = record
            return
        self.registry.add(record)

    def _check_pending(self, plugin: object, name: str) -> None:
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"unknown hook: {exc}") from None

    def _collect(self, plugin: object, name: str) -> Contributions:
        c = Contributions()

        def add_to(target: dict[str, Any], kind: str) -> Callable[..., None]:
            def register(key: str, value: Any) -> None:
                if key in target:
                    raise PluginError(f"{kind} {key!r} registered twice")
                target[key] = value

            return register

        def register_manifest(path: Any) -> None:
            from gigi_core.manifest.loader import load_manifest

            c.manifests.append(load_manifest(path, known_capabilities=self.known, cache=self.cache))

        def register_provider(provider: Any) -> None:
            add_to(c.providers, "provider")(str(provider.name), provider)

        def register_migrations(plugin_name: str, versions: Any) -> None:
            path = Path(str(versions))
            if not path.is_dir():
                raise PluginError(f"migrations folder {path} does not exist")
            add_to(c.migrations, "migrations for")(plugin_name, path)

        def register_job(job: str, fn: Any, **options: Any) -> None:
            from gigi_core.jobs.spec import JobSpec

            unknown = set(options) - {"schedule", "concurrency", "retries", "timeout"}
            if unknown:
                raise PluginError(f"job {job!r}: unknown option(s) {', '.join(sorted(unknown))}")
            add_to(c.jobs, "job")(job, JobSpec(job, fn, plugin=name, **options))

        registers: dict[str, Callable[..., None]] = {
            "register_manifests": register_manifest,
            "register_tools": add_to(c.tools, "tool"),
            "register_providers": register_provider,
            "register_surfaces": add_to(c.surfaces, "surface"),
            "register_retrievers": add_to(c.retrievers, "retriever"),
            "register_config_models": add_to(c.config_models, "config model for"),
            "register_migrations": register_migrations,
            "register_jobs": register_job,
        }
        for hook in REGISTRATION_HOOKS:
            for impl in getattr(self.pm.hook, hook).get_hookimpls():
                if impl.plugin is not plugin:
                    continue
                try:
                    result = impl.function(register=registers[hook])
                except ManifestError:
                    raise
                except Exception as exc:
                    raise PluginError(f"hook {hook} raised {_describe(exc)}") from exc
                if inspect.isawaitable(result):
                    close = getattr(result, "close", None)
                    if close:
                        close()
                    raise PluginError(f"hook {hook} must be synchronous")
        return c

    def _validate(self, record: PluginRecord) -> None:
        c = record.contributions
        names = set()
        actions: dict[str, Any] = {}
        for m in record.manifests:
            if m.plugin.name in self.registry.manifests or m.plugin.name in names:
                owner = self.registry.owner_of(m.plugin.name)
                if owner is None:
                    raise PluginError(f"plugin name {m.plugin.name!r} is declared twice")
                # First wins; the clash is refused loudly, naming both distributions, and the
                # state saved for one never goes to the other (it is bound to its identity).
                message = (
                    f"plugin name {m.plugin.name!r} is already declared by {owner.name} "
                    f"({owner.identity}); {record.name} ({record.identity}) was not loaded, "
                    "and neither gets the other's per-guild state or sealed config"
                )
                log.error("plugin name clash: %s", message)
                raise PluginError(message)
            names.add(m.plugin.name)
            actions.update({a.name: a for a in m.actions})
        problems = self.registry.conflicts(c)
        problems += [
            f"handler registered for {n!r}, which no manifest of this plugin declares"
            for n in sorted(set(c.tools) - set(actions))
        ]
        problems += [
            f"action {n!r} has no handler (register it in register_tools)"
            for n in sorted(set(actions) - set(c.tools))
        ]
        for n in sorted(set(actions) & set(c.tools)):
            problems += _signature_problems(n, c.tools[n], actions[n].args)
        for plugin_name in set(c.config_models) | set(c.migrations):
            if plugin_name not in names:
                problems.append(
                    f"{plugin_name!r} is not a plugin declared by this module's manifests"
                )
        if problems:
            raise PluginError("; ".join(problems))


def _signature_problems(
    action: str, handler: Callable[..., Any], schema: dict[str, Any]
) -> list[str]:
    """A handler takes ``ctx`` then one keyword per schema property (or ``**kwargs``)."""
    if not callable(handler):
        return [f"handler for {action!r} is not callable"]
    params = _parameters(handler)
    if params is None:
        return []
    if not params:
        return [f"handler for {action!r} must accept ctx as its first parameter"]
    rest = params[1:]
    if any(kind is _P.VAR_KEYWORD for _, kind, _ in rest):
        return []
    props = set((schema.get("properties") or {}).keys())
    required = set(schema.get("required") or [])
    named = (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)
    accepted = {name for name, kind, _ in rest if kind in named}
    problems = [
        f"handler for {action!r} does not accept argument {p!r} from its manifest"
        for p in sorted(props - accepted)
    ]
    for name, kind, has_default in rest:
        if kind not in named or has_default:
            continue
        if name not in props:
            problems.append(
                f"handler for {action!r} requires {name!r}, which the manifest does not declare"
            )
        elif name not in required and "default" not in schema["properties"][name]:
            problems.append(
                f"handler for {action!r} requires {name!r}, which the manifest makes optional "
                "without a default"
            )
    return problems


_P = inspect.Parameter
Param = tuple[str, Any, bool]  # name, kind, has a default


def _parameters(handler: Callable[..., Any]) -> list[Param] | None:
    """The handler's parameters as ``inspect.signature`` sees them, None when it cannot say.

    Plain functions and their bound methods are read from the code object: the signature
    objects cost ~20 us a handler, which thousands of actions feel at start-up.
    """
    function, bound = handler, False
    if isinstance(handler, types.MethodType):
        function, bound = handler.__func__, True
    if type(function) is not types.FunctionType or any(
        hasattr(function, a) for a in ("__wrapped__", "__signature__")
    ):
        try:
            return [
                (p.name, p.kind, p.default is not p.empty)
                for p in inspect.signature(handler).parameters.values()
            ]
        except (TypeError, ValueError):
            return None
    code = function.__code__
    names = code.co_varnames
    positional, kwonly = code.co_argcount, code.co_kwonlyargcount
    defaults = len(function.__defaults__ or ())
    kwdefaults = function.__kwdefaults__ or {}
    params: list[Param] = []
    for i, name in enumerate(names[:positional]):
        kind = _P.POSITIONAL_ONLY if i < code.co_posonlyargcount else _P.POSITIONAL_OR_KEYWORD
        params.append((name, kind, i >= positional - defaults))
    extra = positional + kwonly
    if code.co_flags & inspect.CO_VARARGS:
        params.append((names[extra], _P.VAR_POSITIONAL, False))
        extra += 1
    params += [(name, _P.KEYWORD_ONLY, name in kwdefaults) for name in names[positional:][:kwonly]]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append((names[extra], _P.VAR_KEYWORD, False))
    if not bound:
        return params
    if params and params[0][1] in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
        return params[1:]  # the instance takes the first one
    return params if params and params[0][1] is _P.VAR_POSITIONAL else None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, GigiError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
