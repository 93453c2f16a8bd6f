"""Manifest-declared commands: the words, the typed options, and what a surface can express.

An action with ``command: "memory enable"`` becomes an exact command on every surface. Its
options come from the args JSON Schema (``gigi_core.manifest.command_options``); a schema
a chat surface cannot render as typed options is a load error naming the action and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gigi_core.manifest.command_options import (
    MAX_CHOICES,
    MAX_DESCRIPTION,
    MAX_OPTIONS,
    MENTIONABLE,
    CommandShapeError,
    OptionSpec,
    OptionType,
    command_options,
    short_description,
)
from gigi_core.manifest.models import ActionSpec

__all__ = [
    "MAX_CHOICES",
    "MAX_DESCRIPTION",
    "MAX_OPTIONS",
    "MENTIONABLE",
    "CommandShapeError",
    "CommandSpec",
    "OptionSpec",
    "OptionType",
    "build_command",
    "command_options",
]


@dataclass(frozen=True)
class CommandSpec:
    """An exact command: ``words`` (root first), the action it runs and its options."""

    words: tuple[str, ...]
    action: str
    plugin: str
    capability: str
    description: str
    options: tuple[OptionSpec, ...]
    admin_default: bool  # the capability defaults to admins: surfaces hide it from others
    ephemeral: bool

    @property
    def root(self) -> str:
        return self.words[0]

    @property
    def text(self) -> str:
        return " ".join(self.words)

    def option(self, name: str) -> OptionSpec | None:
        return next((o for o in self.options if o.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "command": self.text,
            "action": self.action,
            "plugin": self.plugin,
            "capability": self.capability,
            "admin_default": self.admin_default,
            "description": self.description,
            "options": [
                {
                    "name": o.name,
                    "type": o.type,
                    "required": o.required,
                    "description": o.description,
                    **({"choices": list(o.choices)} if o.choices else {}),
                }
                for o in self.options
            ],
        }


def build_command(action: ActionSpec, *, admin_default: bool) -> CommandSpec:
    """The command of an action that declares one; raises CommandShapeError otherwise."""
    assert action.command is not None
    return CommandSpec(
        words=tuple(action.command.split()),
        action=action.name,
        plugin=action.plugin,
        capability=action.capability,
        description=short_description(action.description),
        options=command_options(action.args),
        admin_default=admin_default,
        ephemeral=action.visibility == "ephemeral" or admin_default,
    )
