"""Which args schemas a chat surface can offer as typed command options.

This is part of checking a manifest (``gigi manifest validate`` reports it with the file
and line), so it lives with the manifest; ``gigi_core.commands`` builds the commands
themselves and re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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


class CommandShapeError(ValueError):
    """The args schema cannot be offered as typed options; ``field`` names the property."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


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
        description=short_description(str(schema.get("description") or name)),
        required=required,
        choices=choices,
        minimum=_bound(schema, "minimum", "exclusiveMinimum", kind, +1),
        maximum=_bound(schema, "maximum", "exclusiveMaximum", kind, -1),
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


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str, kind: str, step: int) -> Any:
    """Chat surfaces take inclusive bounds: an integer's exclusive bound moves by one.

    A number's exclusive bound is passed as it is; the args schema still refuses the edge.
    """
    if inclusive in schema:
        return schema[inclusive]
    value = schema.get(exclusive)
    if value is not None and kind == "integer" and float(value).is_integer():
        return int(value) + step
    return value


def short_description(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"
