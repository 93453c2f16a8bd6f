"""Console and CLI spelling of a command's arguments: ``key=value`` words, or one JSON object.

Values are converted by the option's type; the action's JSON Schema still validates the
result on the tool-call path, so this only has to be helpful, not authoritative.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from gigi_core.commands.spec import CommandSpec, OptionSpec
from gigi_core.errors import InvalidArguments


def parse_arguments(command: CommandSpec, rest: str) -> dict[str, Any]:
    """``channel=general retention_days=30`` or ``{"channel": "general"}`` to an args dict."""
    rest = rest.strip()
    if rest.startswith("{"):
        try:
            value = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise InvalidArguments(
                command.action, "", f"not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(value, dict):
            raise InvalidArguments(command.action, "", "the arguments must be a JSON object")
        return value
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise InvalidArguments(command.action, "", f"cannot split the arguments ({exc})") from None
    args: dict[str, Any] = {}
    for word in words:
        name, eq, raw = word.partition("=")
        option = _option_named(command, name) if eq else None
        name = option.name if option is not None else name.strip()
        if option is None:
            known = ", ".join(o.name for o in command.options) or "none"
            what = f"unknown option {name!r}" if eq else f"{word!r} is not NAME=VALUE"
            raise InvalidArguments(command.action, name if eq else "", f"{what} (options: {known})")
        args[name] = _convert(command.action, option.name, option.type, raw)
    return args


def _option_named(command: CommandSpec, written: str) -> OptionSpec | None:
    """The option as written (``max-age``), or with ``-`` and ``_`` swapped, or ``--name``."""
    name = written.strip()
    for candidate in (name, name.lstrip("-")):
        for spelling in (candidate, candidate.replace("-", "_"), candidate.replace("_", "-")):
            option = command.option(spelling)
            if option is not None:
                return option
    return None


def _convert(action: str, name: str, kind: str, raw: str) -> Any:
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
    except ValueError:
        article = "an" if kind == "integer" else "a"
        raise InvalidArguments(action, name, f"{raw!r} is not {article} {kind}") from None
    if kind == "boolean":
        lowered = raw.lower()
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0"):
            return False
        raise InvalidArguments(action, name, f"{raw!r} is not true or false")
    if kind in ("channel", "user", "role"):
        return raw.strip("<>#@&!")  # a pasted mention <#123> / <@!42> becomes the id
    return raw


def usage(command: CommandSpec) -> str:
    """``/memory enable channel=<channel> [retention_days=<integer>]``."""
    parts = [f"/{command.text}"]
    for o in command.options:
        part = f"{o.name}=<{'|'.join(map(str, o.choices)) if o.choices else o.type}>"
        parts.append(part if o.required else f"[{part}]")
    return " ".join(parts)
