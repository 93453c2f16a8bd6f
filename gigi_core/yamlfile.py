"""YAML with line numbers, shared by manifests and eval cases.

ruamel's round-trip nodes remember where each key and item came from, so a pydantic
location can be turned into ``PATH:LINE: field: message`` for the person who wrote the file.
"""

from __future__ import annotations

from typing import Any

Loc = tuple[str | int, ...]


class YamlSyntaxError(ValueError):
    """The text is not YAML; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def load_all(text: str) -> list[Any]:
    """Every non-empty document, as ruamel round-trip nodes (they carry line numbers)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return [d for d in YAML(typ="rt").load_all(text) if d is not None]
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise YamlSyntaxError(line, str(exc.problem or exc.context)) from exc
    except YAMLError as exc:
        raise YamlSyntaxError(1, str(exc)) from exc


def plain(node: Any) -> Any:
    """ruamel's round-trip nodes to plain dicts, lists and scalars (for pydantic and schemas).

    Its scalar subclasses (``ScalarInt`` for ``0``, ``ScalarFloat``, ``HexInt`` ...) are not
    accepted by jsonschema-rs as JSON numbers, so a schema bound like ``minimum: 0`` would
    be refused as invalid: every scalar becomes its builtin type.
    """
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    for kind in (int, float, str):
        if isinstance(node, kind):
            return kind(node)
    return node


def problem(name: str, data: Any, loc: Loc, msg: str, kind: str, root: str) -> str:
    """One ``PATH:LINE: field: message`` line from a pydantic error (or our own check)."""
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or "-" in p)))
    field = ".".join(str(p) for p in loc) or root
    if kind == "missing":
        msg = "required field is missing"
    elif kind == "extra_forbidden":
        msg = "unknown field"
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{name}:{line_of(data, loc)}: {field}: {msg}"


def line_of(data: Any, loc: Loc) -> int:
    """The 1-based line of the deepest part of ``loc`` present in the document."""
    line = getattr(getattr(data, "lc", None), "line", 0) or 0
    node = data
    for part in loc:
        try:
            if isinstance(node, dict) and part in node:
                line = node.lc.key(part)[0]
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                line = node.lc.item(part)[0]
                node = node[part]
            else:
                break
        except (AttributeError, KeyError, TypeError):
            break
    return line + 1
