"""Pydantic models of manifest v1: they validate manifest files and generate the JSON Schema.

The kernel holds the validated result as the plain dataclasses of ``manifest.models``, so a
CLI start that finds its manifests in the cache never imports pydantic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gigi_core.manifest.models import (
    ACTION_NAME,
    CAPABILITY_NAME,
    COMMAND_WORDS,
    PLUGIN_NAME,
    ConfirmRule,
    Safety,
)


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
    dm_events: bool = Field(
        default=False, description="Receive surface events from direct messages (no guild)"
    )
    per_server: bool = Field(
        default=True,
        description="False when there is nothing to turn on in a server (a dashboard "
        "serving the whole bot): left out of the per-server plugin lists, cannot be enabled",
    )

    @field_validator("kernel")
    @classmethod
    def _specifier(cls, value: str) -> str:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(f"not a PEP 440 version specifier: {value!r}") from exc
        return value


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
    command: str | None = Field(
        default=None,
        pattern=COMMAND_WORDS,
        description="The words of an exact command every surface offers, e.g. 'memory enable'",
    )
    offer_to_model: bool = Field(
        default=True, description="False: only a command; the model is never offered it"
    )

    @field_validator("args")
    @classmethod
    def _object_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object":
            raise ValueError('args must be a JSON Schema with "type": "object"')
        return value


class Manifest(_Strict):
    """A whole manifest file (version 1)."""

    manifest_version: Literal[1]
    plugin: PluginSpec
    actions: tuple[ActionSpec, ...] = ()
