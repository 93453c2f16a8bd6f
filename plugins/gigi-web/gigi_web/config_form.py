"""A plugin's settings form, generated from its config JSON Schema: one field per property,
typed inputs, secret fields write-only (never filled in, never echoed), and the submitted
form turned back into a config with errors by field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SIMPLE = ("string", "integer", "number", "boolean")


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    help: str
    kind: str  # string | integer | number | boolean | choice | json
    required: bool
    secret: bool
    choices: tuple[str, ...] = ()
    value: str = ""  # what the input shows; always "" for a secret
    has_secret: bool = False  # a secret value is stored (shown as "set", never the value)


def _kind(schema: dict[str, Any]) -> str:
    if isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
        return "choice"
    kind = schema.get("type")
    return kind if kind in SIMPLE else "json"


def fields_of(
    config_schema: dict[str, Any], current: dict[str, Any], secrets_set: set[str]
) -> list[Field]:
    """The form's fields, in the schema's order, filled with the current plain values."""
    props = config_schema.get("properties") or {}
    required = set(config_schema.get("required") or [])
    out = []
    for name, schema in props.items():
        if not isinstance(schema, dict):
            continue
        kind = _kind(schema)
        secret = bool(schema.get("x-gigi-secret"))
        value = "" if secret or name not in current else _shown(kind, current[name])
        out.append(
            Field(
                name=name,
                label=str(schema.get("title") or name),
                help=str(schema.get("description") or ""),
                kind=kind,
                required=name in required,
                secret=secret,
                choices=tuple(schema.get("enum") or ()) if kind == "choice" else (),
                value=value,
                has_secret=secret and name in secrets_set,
            )
        )
    return out


def _shown(kind: str, value: Any) -> str:
    if kind == "boolean":
        return "on" if value else ""
    if kind == "json":
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def parse(fields: list[Field], form: Any) -> tuple[dict[str, Any], dict[str, str], set[str]]:
    """(config, errors by field, secrets left blank to keep). Errors never quote the value."""
    config: dict[str, Any] = {}
    errors: dict[str, str] = {}
    keep: set[str] = set()
    for f in fields:
        raw = form.get(f.name)
        text = raw.strip() if isinstance(raw, str) else ""
        if f.kind == "boolean":
            config[f.name] = raw == "on"
            continue
        if text == "":
            if f.secret and f.has_secret:
                keep.add(f.name)
            elif f.required:
                errors[f.name] = "This setting is required."
            continue
        try:
            config[f.name] = _value(f, text)
        except ValueError as exc:
            errors[f.name] = str(exc)
    return config, errors, keep


def _value(f: Field, text: str) -> Any:
    if f.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("Enter a whole number, like 10.") from None
    if f.kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError("Enter a number, like 2.5.") from None
    if f.kind == "choice":
        if text not in f.choices:
            raise ValueError(f"Pick one of: {', '.join(f.choices)}.")
        return text
    if f.kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Enter valid JSON ({exc.msg}).") from None
    return text


def error_by_field(plugin: str, message: str, names: set[str]) -> tuple[str | None, str]:
    """Split the kernel's ``invalid config for P: field: rule`` into (field, rule)."""
    prefix = f"invalid config for {plugin}: "
    if message.startswith(prefix):
        where, _, rule = message[len(prefix) :].partition(": ")
        top = where.split(".", 1)[0]
        if top in names and rule:
            return top, rule[:1].upper() + rule[1:]
    return None, message
