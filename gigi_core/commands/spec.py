"""Manifest-declared commands: the words, the typed options, and what a surface can express.

An action with ``command: "memory enable"`` becomes an exact command on every surface. Its
options come from the args JSON Schema; a schema a chat surface cannot render as typed
options is a load error that names the action and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gigi_core.manifest.models import ActionSpec

OptionType = Literal["string", "integer", "number", "boolean", "channel", "user", "role"]
MENTIONABLE = ("channel", "user", "role")
MAX_OPTIONS = 25
MAX_CHOICES = 25
MAX_DESCRIPTION = 100


@dataclass(frozen=True)
class OptionSpec:
    """One typed option of a command, read from one top-level args property."""

    name: str
    type: OptionType
    description: str
    required: bool
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    default: Any = None


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


class CommandShapeError(ValueError):
    """The args schema cannot be offered as typed options; ``field`` names the property."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


def build_command(action: ActionSpec, *, admin_default: bool) -> CommandSpec:
    """The command of an action that declares one; raises CommandShapeError otherwise."""
    assert action.command is not None
    return CommandSpec(
        words=tuple(action.command.split()),
        action=action.name,
        plugin=action.plugin,
        capability=action.capability,
        description=_short(action.description),
        options=command_options(action.args),
        admin_default=admin_default,
        ephemeral=action.visibility == "ephemeral" or admin_default,
    )


def command_options(args: dict[str, Any]) -> tuple[OptionSpec, ...]:
    """Typed options from an object schema: required ones first, as Discord demands."""
    props = args.get("properties") or {}
    if len(props) > MAX_OPTIONS:
        raise CommandShapeError("", f"a command takes at most {MAX_OPTIONS} options")
    required = set(args.get("required") or [])
    options = [_option(name, schema, name in required) for name, schema in props.items()]
    return tuple(sorted(options, key=lambda o: not o.required))


def _option(name: str, schema: Any, required: bool) -> OptionSpec:
    import re

    if not re.fullmatch(r"[a-z0-9_-]{1,32}", name):
        raise CommandShapeError(
            name, "option names must be 1-32 lower-case letters, digits, _ or -"
        )
    if not isinstance(schema, dict):
        raise CommandShapeError(name, "the property must be a schema object")
    kind = _kind(name, schema)
    choices: tuple[Any, ...] = ()
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        if kind not in ("string", "integer", "number") or len(values) > MAX_CHOICES:
            raise CommandShapeError(
                name, f"choices must be at most {MAX_CHOICES} strings or numbers"
            )
        if not all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in values):
            raise CommandShapeError(name, "choices must be strings or numbers")
        choices = tuple(values)
    return OptionSpec(
        name=name,
        type=kind,
        description=_short(str(schema.get("description") or name)),
        required=required,
        choices=choices,
        minimum=schema.get("minimum", schema.get("exclusiveMinimum")),
        maximum=schema.get("maximum", schema.get("exclusiveMaximum")),
        min_length=schema.get("minLength"),
        max_length=schema.get("maxLength"),
        default=schema.get("default"),
    )


def _kind(name: str, schema: dict[str, Any]) -> OptionType:
    mark = schema.get("x-gigi-type") or ("channel" if schema.get("x-gigi-channel") else None)
    json_type = schema.get("type")
    if mark is not None:
        if mark not in MENTIONABLE:
            raise CommandShapeError(name, f"x-gigi-type must be one of {', '.join(MENTIONABLE)}")
        if json_type != "string":
            raise CommandShapeError(name, f'x-gigi-type {mark} needs "type": "string" (an id)')
        return mark
    if json_type in ("string", "integer", "number", "boolean"):
        return json_type
    shown = json_type if json_type is not None else "no type"
    raise CommandShapeError(
        name,
        f"type {shown!r} cannot be a command option (use string, integer, number, boolean, "
        "an enum, or x-gigi-type channel/user/role)",
    )


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"
