"""Find and validate case files; every broken case is reported at once as ``file:line``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gigi_core.evalharness.models import Case
from gigi_core.evalharness.yamlfile import CaseFileError, load_documents, validate

SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LoadedCase:
    case: Case
    path: Path
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def case_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, plus every ``*.yaml``/``*.yml`` under given directories, sorted."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES))
        elif path.exists():
            files.append(path)
        else:
            raise CaseFileError([f"{path}:1: no such file or directory"])
    return files


def load_case_file(path: Path) -> list[LoadedCase]:
    cases = []
    problems: list[str] = []
    for doc in load_documents(path):
        try:
            case = validate(Case, doc, path)
        except CaseFileError as exc:
            problems.extend(exc.problems)
            continue
        line = (getattr(getattr(doc, "lc", None), "line", 0) or 0) + 1
        cases.append(LoadedCase(case, path, line))
    if problems:
        raise CaseFileError(problems)
    return cases


def load_cases(paths: Iterable[str | Path]) -> list[LoadedCase]:
    """All cases under ``paths``; raises CaseFileError listing every problem in every file."""
    loaded: list[LoadedCase] = []
    problems: list[str] = []
    for path in case_files(paths):
        try:
            loaded.extend(load_case_file(path))
        except CaseFileError as exc:
            problems.extend(exc.problems)
    seen: dict[str, LoadedCase] = {}
    for item in loaded:
        if item.case.name in seen:
            problems.append(
                f"{item.where}: name: {item.case.name!r} is already used at {seen[item.case.name].where}"
            )
        seen.setdefault(item.case.name, item)
    if problems:
        raise CaseFileError(problems)
    return loaded
