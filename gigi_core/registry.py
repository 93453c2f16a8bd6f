"""What loaded plugins contributed: manifests, handlers, providers, surfaces and more."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gigi_core.manifest.loader import LoadedManifest
from gigi_core.manifest.models import ActionSpec, CapabilitySpec, Manifest


@dataclass
class Contributions:
    """Everything one plugin module registered; merged into the Registry only if all is valid."""

    manifests: list[LoadedManifest] = field(default_factory=list)
    tools: dict[str, Callable[..., Any]] = field(default_factory=dict)
    providers: dict[str, Any] = field(default_factory=dict)
    surfaces: dict[str, Callable[..., Any]] = field(default_factory=dict)
    retrievers: dict[str, Any] = field(default_factory=dict)
    config_models: dict[str, Any] = field(default_factory=dict)
    migrations: dict[str, Path] = field(default_factory=dict)
    jobs: dict[str, Any] = field(default_factory=dict)  # name -> gigi_core.jobs.spec.JobSpec


@dataclass
class PluginRecord:
    """One plugin module as `gigi plugins list` shows it."""

    name: str
    module: str
    source: Literal["default", "entrypoint", "inline"]
    distribution: str | None = None
    version: str | None = None
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    contributions: Contributions = field(default_factory=Contributions)

    @property
    def manifests(self) -> list[Manifest]:
        return [m.manifest for m in self.contributions.manifests]

    @property
    def identity(self) -> str:
        """What per-guild state and sealed config are bound to: the distribution name, or
        ``default:NAME`` / ``inline:NAME`` / ``entrypoint:NAME`` when there is none."""
        return self.distribution or f"{self.source}:{self.name}"

    @property
    def actions(self) -> list[str]:
        return sorted(a.name for m in self.manifests for a in m.actions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "source": self.source,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "error": self.error,
            "plugins": [m.plugin.name for m in self.manifests],
            "actions": self.actions,
            "providers": sorted(self.contributions.providers),
            "surfaces": sorted(self.contributions.surfaces),
        }


@dataclass
class Registry:
    """The merged view the kernel works from."""

    records: dict[str, PluginRecord] = field(default_factory=dict)
    manifests: dict[str, Manifest] = field(default_factory=dict)
    actions: dict[str, ActionSpec] = field(default_factory=dict)
    handlers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    capabilities: dict[str, CapabilitySpec] = field(default_factory=dict)
    providers: dict[str, Any] = field(default_factory=dict)
    surfaces: dict[str, Callable[..., Any]] = field(default_factory=dict)
    retrievers: dict[str, Any] = field(default_factory=dict)
    config_models: dict[str, Any] = field(default_factory=dict)
    migrations: dict[str, Path] = field(default_factory=dict)
    jobs: dict[str, Any] = field(default_factory=dict)
    _validators: dict[str, Any] = field(default_factory=dict)
    _identities: dict[str, str] = field(default_factory=dict)  # manifest plugin -> identity

    def add(self, record: PluginRecord) -> None:
        c = record.contributions
        self._identities.clear()
        for loaded in c.manifests:
            m = loaded.manifest
            self.manifests[m.plugin.name] = m
            for cap in m.plugin.capabilities:
                self.capabilities.setdefault(cap.name, cap)
            for action in m.actions:
                self.actions[action.name] = action
        self.handlers.update(c.tools)
        self.providers.update(c.providers)
        self.surfaces.update(c.surfaces)
        self.retrievers.update(c.retrievers)
        self.config_models.update(c.config_models)
        self.migrations.update(c.migrations)
        self.jobs.update(c.jobs)
        self.records[record.name] = record

    def fail(self, name: str, error: str) -> None:
        """Mark a loaded plugin failed after the fact and withdraw everything it contributed."""
        record = self.records.get(name)
        if record is None:
            return
        record.status, record.error = "failed", error
        from gigi_core.policy.capabilities import KERNEL_CAPABILITIES

        kernel_caps = {c.name: c for c in KERNEL_CAPABILITIES}
        records = list(self.records.values())
        for attr in (
            "records",
            "manifests",
            "actions",
            "handlers",
            "providers",
            "surfaces",
            "retrievers",
            "config_models",
            "migrations",
            "jobs",
            "_validators",
            "_identities",
        ):
            getattr(self, attr).clear()
        self.capabilities = kernel_caps
        for r in records:
            if r.status == "ok":
                self.add(r)
            else:
                self.records[r.name] = r

    def conflicts(self, contributions: Contributions) -> list[str]:
        """Names another plugin already registered: the first one keeps them."""
        problems = []
        for kind, mine, theirs in (
            ("provider", contributions.providers, self.providers),
            ("surface", contributions.surfaces, self.surfaces),
            ("retriever", contributions.retrievers, self.retrievers),
            ("job", contributions.jobs, self.jobs),
        ):
            problems += [
                f"{kind} {n!r} is already registered by another plugin"
                for n in sorted(set(mine) & set(theirs))
            ]
        return problems

    def handler_args(self, action: str) -> frozenset[str] | None:
        """The argument names a handler may receive: the schema's properties, or None when
        the handler takes ``**kwargs`` (then everything the schema admits is passed)."""
        key = f"{action}#handler-args"
        if key not in self._validators:
            import inspect

            handler = self.handlers[action]
            try:
                params = inspect.signature(handler).parameters.values()
                open_ended = any(p.kind is p.VAR_KEYWORD for p in params)
            except (TypeError, ValueError):
                open_ended = True
            props = (self.actions[action].args.get("properties") or {}).keys()
            self._validators[key] = None if open_ended else frozenset(props)
        return self._validators[key]

    def provider(self, name: str) -> Any:
        """The provider named ``name``, built now if it was registered lazily; KeyError if none."""
        provider = self.providers[name]
        if hasattr(provider, "load") and hasattr(provider, "target"):
            provider = self.providers[name] = provider.load()
        return provider

    def all_providers(self) -> list[Any]:
        return [self.provider(name) for name in sorted(self.providers)]

    def plugin_loaded(self, plugin: str) -> bool:
        return plugin in self.manifests

    def capability_default(self, capability: str) -> Literal["everyone", "admins"] | None:
        spec = self.capabilities.get(capability)
        return spec.default if spec else None

    def validator(self, action: str, *, result: bool = False) -> Any:
        """The action's compiled args (or result) validator, built once and reused."""
        key = f"{action}#result" if result else action
        validator = self._validators.get(key)
        if validator is None:
            import jsonschema_rs

            spec = self.actions[action]
            validator = jsonschema_rs.Draft202012Validator(spec.result if result else spec.args)
            self._validators[key] = validator
        return validator

    def distribution_of(self, plugin: str) -> str | None:
        """The identity (``PluginRecord.identity``) of the loaded plugin named ``plugin``."""
        if not self._identities:
            self._identities.update(
                (m.plugin.name, r.identity)
                for r in self.records.values()
                if r.status == "ok"
                for m in r.manifests
            )
        return self._identities.get(plugin)

    def owner_of(self, plugin: str) -> PluginRecord | None:
        for record in self.records.values():
            if any(m.plugin.name == plugin for m in record.manifests):
                return record
        return None
