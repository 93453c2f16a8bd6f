"""YAML with line numbers: every problem in a case file is reported as ``PATH:LINE: field: message``.

The same approach as the manifest loader (ruamel's round-trip nodes remember where each key
and item came from), kept separate so case files and manifests can evolve independently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gigi_core.errors import GigiError

M = TypeVar("M", bound=BaseModel)


class CaseFileError(GigiError):
    """A case file is unreadable or invalid; ``problems`` holds one ``PATH:LINE: ...`` each."""

    exit_code = 2

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def load_documents(path: Path) -> list[Any]:
    """Every YAML document in ``path`` (``---`` separates cases in one file)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError([f"{path}:1: cannot read: {exc}"]) from exc
    try:
        return [d for d in YAML(typ="rt").load_all(text) if d is not None]
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise CaseFileError([f"{path}:{line}: {exc.problem or exc.context}"]) from exc
    except YAMLError as exc:
        raise CaseFileError([f"{path}:1: {exc}"]) from exc


def validate(model: type[M], data: Any, path: Path) -> M:
    """Validate one document, translating pydantic's locations into file lines."""
    if not isinstance(data, dict):
        raise CaseFileError([f"{path}:{_line_of(data, ())}: a case must be a YAML mapping"])
    try:
        return model.model_validate(plain(data))
    except ValidationError as exc:
        problems = [
            _format(path, data, tuple(err["loc"]), err["msg"], err["type"])
            for err in exc.errors(include_url=False)
        ]
        raise CaseFileError(problems) from None


def plain(node: Any) -> Any:
    """ruamel's commented containers to plain dicts and lists."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node


def _format(path: Path, data: Any, loc: tuple[Any, ...], msg: str, kind: str) -> str:
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or "-" in p)))
    field = ".".join(str(p) for p in loc) or "(case)"
    if kind == "missing":
        msg = "required field is missing"
    elif kind == "extra_forbidden":
        msg = "unknown field"
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{path}:{_line_of(data, loc)}: {field}: {msg}"


def _line_of(data: Any, loc: tuple[Any, ...]) -> int:
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
