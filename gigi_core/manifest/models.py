"""Pydantic models of manifest v1: the typed contract every plugin tool is declared with."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PLUGIN_NAME = r"^[a-z][a-z0-9_]*$"
ACTION_NAME = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"
CAPABILITY_NAME = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"


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


class _Strict(BaseModel):
    # defer_build: the validator is built on first use, keeping `import` cheap for the CLI.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class CapabilitySpec(_Strict):
    """A capability the plugin declares; ``default`` says who holds it without a grant."""

    name: str = Field(pattern=CAPABILITY_NAME)
    description: str = Field(min_length=1)
    default: Literal["everyone", "admins"] = "admins"


class PluginSpec(_Strict):
    """The plugin block: identity, compatibility and what it stores."""

    name: str = Field(pattern=PLUGIN_NAME)
    version: str = Field(min_length=1)
    description: str = Field(min_length=1)
    kernel: str = Field(default=">=0.1", description="PEP 440 specifier of compatible kernels")
    data_statement: str = Field(min_length=1, description="What the plugin stores, for admins")
    config_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": False}
    )
    capabilities: tuple[CapabilitySpec, ...] = ()
    discord_permissions: tuple[str, ...] = ()
    intents: tuple[str, ...] = ()
    homepage: str | None = None

    @field_validator("kernel")
    @classmethod
    def _specifier(cls, value: str) -> str:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(f"not a PEP 440 version specifier: {value!r}") from exc
        return value

    def secret_fields(self) -> frozenset[str]:
        """Config properties marked ``x-gigi-secret: true``: stored sealed, shown masked."""
        props = self.config_schema.get("properties", {}) or {}
        return frozenset(
            k for k, v in props.items() if isinstance(v, dict) and v.get("x-gigi-secret")
        )


class ActionSpec(_Strict):
    """One action (tool): arguments, safety class, capability and confirmation rule."""

    name: str = Field(pattern=ACTION_NAME)
    description: str = Field(min_length=1)
    safety: Safety
    capability: str = Field(pattern=CAPABILITY_NAME)
    confirm: ConfirmRule = ConfirmRule.policy
    public_dispatch: bool = False
    visibility: Literal["ephemeral", "public"] = "ephemeral"
    args: dict[str, Any]
    result: dict[str, Any] | None = None
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)

    @field_validator("args")
    @classmethod
    def _object_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object":
            raise ValueError('args must be a JSON Schema with "type": "object"')
        return value

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


class Manifest(_Strict):
    """A whole manifest file (version 1)."""

    manifest_version: Literal[1]
    plugin: PluginSpec
    actions: tuple[ActionSpec, ...] = ()

    @property
    def name(self) -> str:
        return self.plugin.name


def wire_name(action: str) -> str:
    """Map a dotted action name to a provider-safe tool name (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "-", action.replace(".", "__"))[:64]
