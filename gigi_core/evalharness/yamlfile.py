"""YAML with line numbers: every problem in a case file is reported as ``PATH:LINE: field: message``.

The line mapping is shared with the manifest loader (``gigi_core.yamlfile``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gigi_core.errors import GigiError
from gigi_core.yamlfile import YamlSyntaxError, line_of, load_all, plain, problem

__all__ = ["CaseFileError", "load_documents", "plain", "validate"]

M = TypeVar("M", bound=BaseModel)


class CaseFileError(GigiError):
    """A case file is unreadable or invalid; ``problems`` holds one ``PATH:LINE: ...`` each."""

    exit_code = 2

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def load_documents(path: Path) -> list[Any]:
    """Every YAML document in ``path`` (``---`` separates cases in one file)."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError([f"{path}:1: cannot read: {exc}"]) from exc
    try:
        return load_all(text)
    except YamlSyntaxError as exc:
        raise CaseFileError([f"{path}:{exc.line}: {exc}"]) from exc


def validate(model: type[M], data: Any, path: Path) -> M:
    """Validate one document, translating pydantic's locations into file lines."""
    if not isinstance(data, dict):
        raise CaseFileError([f"{path}:{line_of(data, ())}: a case must be a YAML mapping"])
    try:
        return model.model_validate(plain(data))
    except ValidationError as exc:
        problems = [
            problem(str(path), data, tuple(err["loc"]), err["msg"], err["type"], "(case)")
            for err in exc.errors(include_url=False)
        ]
        raise CaseFileError(problems) from None
