"""Manifest v1 as the kernel holds it: frozen dataclasses, already validated.

Files are validated by the pydantic models in ``manifest.validation`` (the boundary); these
plain classes are what the registry, policy and runtime read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal

PLUGIN_NAME = r"^[a-z][a-z0-9_]*$"
ACTION_NAME = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"
CAPABILITY_NAME = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"
# One to three lower-case words (a slash root, an optional group, a subcommand).
COMMAND_WORDS = r"^[a-z][a-z0-9_-]{0,31}( [a-z][a-z0-9_-]{0,31}){0,2}$"


class Safety(StrEnum):
    """How much harm an action can do; drives the default confirmation rule."""

    read_only = "read_only"
    write = "write"
    destructive = "destructive"
    external = "external"


class ConfirmRule(StrEnum):
    """never: no prompt (destructive still confirms); policy: safety-class default; always."""

    never = "never"
    policy = "policy"
    always = "always"


def _empty_object() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


@dataclass(frozen=True)
class CapabilitySpec:
    """A capability; ``default`` says who holds it without a grant."""

    name: str
    description: str
    default: Literal["everyone", "admins"] = "admins"


@dataclass(frozen=True)
class PluginSpec:
    """The plugin block: identity, compatibility and what it stores."""

    name: str
    version: str
    description: str
    data_statement: str
    kernel: str = ">=0.1"
    config_schema: dict[str, Any] = field(default_factory=_empty_object)
    capabilities: tuple[CapabilitySpec, ...] = ()
    discord_permissions: tuple[str, ...] = ()
    intents: tuple[str, ...] = ()
    homepage: str | None = None
    dm_events: bool = False  # receives events of direct messages
    per_server: bool = True  # False: nothing to turn on in a server (a dashboard)

    def secret_fields(self) -> frozenset[str]:
        """Config properties marked ``x-gigi-secret: true``: stored sealed, shown masked."""
        props = self.config_schema.get("properties", {}) or {}
        return frozenset(
            k for k, v in props.items() if isinstance(v, dict) and v.get("x-gigi-secret")
        )


@dataclass(frozen=True)
class ActionSpec:
    """One action (tool): arguments, safety class, capability and confirmation rule."""

    name: str
    description: str
    safety: Safety
    capability: str
    args: dict[str, Any]
    confirm: ConfirmRule = ConfirmRule.policy
    public_dispatch: bool = False
    visibility: Literal["ephemeral", "public"] = "ephemeral"
    result: dict[str, Any] | None = None
    timeout_seconds: float = 30.0
    command: str | None = None  # exact command words, e.g. "memory enable"
    offer_to_model: bool = True  # False: a command only, never shown to the model as a tool

    def __post_init__(self) -> None:
        object.__setattr__(self, "safety", Safety(self.safety))
        object.__setattr__(self, "confirm", ConfirmRule(self.confirm))

    @property
    def plugin(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def needs_confirmation(self) -> bool:
        """What the manifest alone asks for; the policy engine may still add a confirm."""
        if self.confirm is ConfirmRule.always or self.safety is Safety.destructive:
            return True
        if self.confirm is ConfirmRule.policy:
            return self.safety is not Safety.read_only
        return False


@dataclass(frozen=True)
class Manifest:
    """A whole manifest (version 1)."""

    manifest_version: int
    plugin: PluginSpec
    actions: tuple[ActionSpec, ...] = ()

    @property
    def name(self) -> str:
        return self.plugin.name

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        """Build from data that already passed validation (or came from the cache)."""
        plugin = dict(data["plugin"])
        plugin["capabilities"] = tuple(CapabilitySpec(**c) for c in plugin.get("capabilities", ()))
        for key in ("discord_permissions", "intents"):
            plugin[key] = tuple(plugin.get(key, ()))
        return cls(
            manifest_version=data["manifest_version"],
            plugin=PluginSpec(**plugin),
            actions=tuple(ActionSpec(**a) for a in data.get("actions", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        """Shallow, for the cache to serialise: the schemas are shared, not copied (asdict's
        deep copy was an eighth of validating a manifest)."""
        plugin = {f.name: getattr(self.plugin, f.name) for f in fields(PluginSpec)}
        plugin["capabilities"] = [dict(vars(c)) for c in self.plugin.capabilities]
        actions = []
        for action in self.actions:
            item = {f.name: getattr(action, f.name) for f in fields(ActionSpec)}
            item["safety"], item["confirm"] = str(action.safety), str(action.confirm)
            actions.append(item)
        return {"manifest_version": self.manifest_version, "plugin": plugin, "actions": actions}


def wire_name(action: str) -> str:
    """Map a dotted action name to a provider-safe tool name (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "-", action.replace(".", "__"))[:64]
