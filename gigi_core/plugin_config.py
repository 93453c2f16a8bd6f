"""A plugin's guild config checked against its manifest's ``config_schema`` and its config
model: errors name the field and the rule, never the value (it may be a secret)."""

from __future__ import annotations

from typing import Any

from gigi_core.errors import ConfigError


def validate_config(
    plugin: str, manifest: Any, model: Any, config: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """(plain fields, secret fields) of a valid ``config``; ``ConfigError`` otherwise."""
    import jsonschema_rs

    if not isinstance(config, dict):
        raise ConfigError(f"config for {plugin} must be a JSON object")
    validator = jsonschema_rs.Draft202012Validator(manifest.plugin.config_schema)
    secret_names = manifest.plugin.secret_fields()
    # Never echo the config (or a part of it) in an error: it reaches CLI stderr and an
    # admin's chat reply, and a whole-object rule's message quotes every field, secrets
    # included. Name the rule, its schema path and the field instead.
    for error in validator.iter_errors(config):
        path = [str(p) for p in error.instance_path]
        field = ".".join(path) or "(config)"
        hidden = "invalid value (not shown): " if path and path[0] in secret_names else ""
        raise ConfigError(f"invalid config for {plugin}: {field}: {hidden}{_schema_rule(error)}")
    if model is not None:
        from pydantic import ValidationError

        try:
            model.model_validate(config)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            field = ".".join(str(p) for p in err["loc"]) or "(config)"
            raise ConfigError(f"invalid config for {plugin}: {field}: {_model_rule(err)}") from None
    secrets = {k: str(v) for k, v in config.items() if k in secret_names}
    plain = {k: v for k, v in config.items() if k not in secret_names}
    return plain, secrets


def _schema_rule(error: Any) -> str:
    """``breaks maxLength 3 (schema rule /properties/units/maxLength)``: never the value.

    Only values from the schema (a limit, a type, a required name) and member names (the
    paths that are wrong) are shown.
    """
    kind = error.kind
    rule = str(getattr(kind, "name", None) or type(kind).__name__)
    try:
        details = kind.as_dict()
    except Exception:
        details = {}
    types, limit = details.get("types"), details.get("limit")
    prop, unexpected = details.get("property"), details.get("unexpected")
    if rule == "type" and isinstance(types, list) and types:
        phrase = f"must be of type {' or '.join(map(str, types))}"
    elif isinstance(limit, int | float) and not isinstance(limit, bool):
        phrase = f"breaks {rule} {limit:g}"
    elif rule == "required" and isinstance(prop, str):
        phrase = f"needs the property {prop[:64]!r}"
    elif isinstance(unexpected, list) and unexpected:
        names = ", ".join(repr(str(n)[:40]) for n in unexpected[:5])
        phrase = f"has properties the schema does not allow: {names}"
        phrase += " …" if len(unexpected) > 5 else ""
    else:
        phrase = f"does not satisfy {rule}"
    where = "/" + "/".join(str(p) for p in error.schema_path)
    return f"{phrase} (schema rule {where})"


def _model_rule(err: dict[str, Any]) -> str:
    """A config model's message, unless it could quote the value (an author's validator may)."""
    message = str(err.get("msg", ""))
    value = err.get("input")
    quotes = isinstance(value, str | int | float) and len(str(value)) >= 3 and str(value) in message
    if err.get("type") in ("value_error", "assertion_error") or quotes:
        return f"does not satisfy the config model ({err.get('type', 'invalid')})"
    return message
