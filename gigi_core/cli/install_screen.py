"""What ``gigi install`` hands pip, checked before pip runs: wheels and index names only.

pip builds a folder, a source archive or a VCS/URL checkout by running the package's own
build backend, and ``--only-binary=:all:`` does not stop that for a path or URL named
explicitly. Building would run the candidate's code before anyone reviewed it, so such a
spec (on the command line or in ``-r FILE``) is refused here, naming how to build a wheel.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from gigi_core.errors import GigiError

#: What pip treats as an archive file (its ``is_archive_file``), besides wheels.
SOURCE_ARCHIVES = (
    ".zip",
    ".tar.gz",
    ".tgz",
    ".tar",
    ".tar.bz2",
    ".tbz",
    ".tar.xz",
    ".txz",
    ".tlz",
    ".tar.lz",
    ".tar.lzma",
)
#: Options a requirements file may carry: where to look, never how to build.
FILE_OPTIONS = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--no-index",
        "--pre",
        "--trusted-host",
        "--prefer-binary",
        "--only-binary",
        "--require-hashes",
    }
)
BUILD_HINT = (
    "build a wheel in a throwaway environment first (`pip wheel --no-deps SPEC -w wheels/`), "
    "then review and install that file: `gigi install wheels/NAME-VERSION-*.whl`"
)


class SourceBuildError(GigiError):
    """A spec pip would build from source: refused before pip runs."""

    exit_code = 2


def _looks_like_path(spec: str) -> bool:
    """pip's own test: a separator, or a leading dot, makes a spec a path."""
    return os.sep in spec or (os.altsep is not None and os.altsep in spec) or spec.startswith(".")


def _is_wheel_url(url: str) -> bool:
    parts = urlsplit(url)
    return "+" not in parts.scheme and parts.path.lower().endswith(".whl")


def needs_build(spec: str) -> bool:
    """True when pip would run build code for this spec: a folder, a source archive, a VCS
    link or any URL or path that is not a wheel. A plain name comes from the index, where
    ``--only-binary=:all:`` lets pip take wheels only."""
    from packaging.requirements import InvalidRequirement, Requirement

    text = spec.strip()
    try:
        req: Requirement | None = Requirement(text)
    except InvalidRequirement:
        req = None
    if req is not None and req.url:
        return not _is_wheel_url(req.url)
    if req is None and "://" in text:
        return not _is_wheel_url(text)  # a bare URL (or a VCS link)
    lowered = text.lower()
    if req is None or _looks_like_path(text) or lowered.endswith((".whl", *SOURCE_ARCHIVES)):
        # A path: only a wheel file is installed as it is (a folder named *.whl is built).
        return not lowered.endswith(".whl") or Path(text).is_dir()
    return False


def _refuse(spec: str, where: str) -> SourceBuildError:
    return SourceBuildError(
        f"{where}{spec!r} is not a wheel (a folder, a source archive or a VCS link): pip "
        "would run its build code to install it, before anyone reviewed it, so nothing was "
        "installed",
        hint=BUILD_HINT.replace("SPEC", shlex.quote(spec)),
    )


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """A requirements file's lines as pip reads them: continuations joined, comments gone."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if raw.endswith("\\"):
            pending += raw[:-1]
            continue
        line = pending + raw
        pending = ""
        if line.lstrip().startswith("#"):
            line = ""
        else:
            cut = [i for i in (line.find(" #"), line.find("\t#")) if i >= 0]
            line = line[: min(cut)] if cut else line
        if line.strip():
            out.append((start, line.strip()))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def check_requirements_file(path: str) -> None:
    """Refuse a requirements file with anything pip would build, nested files, editable or
    ``--no-binary`` lines, or environment variables (they could name any of those)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise GigiError(
            f"cannot read the requirements file {path}: {exc.strerror or exc}",
            hint="check the path given to -r",
        ) from None
    for number, line in _logical_lines(text):
        where = f"{path} line {number}: "
        if "${" in line:
            raise SourceBuildError(
                f"{where}environment variables are not expanded by gigi install",
                hint="write the value itself into the requirements file",
            )
        tokens = shlex.split(line, posix=True)
        if tokens[0].startswith("-"):
            option = tokens[0].split("=", 1)[0]
            if option not in FILE_OPTIONS:
                raise SourceBuildError(
                    f"{where}{option} is not accepted in a file for gigi install (nested "
                    "files, editable installs and build settings could run a package's code "
                    "before its review)",
                    hint="list each requirement in this one file as NAME==VERSION or a "
                    f"wheel; accepted options: {', '.join(sorted(FILE_OPTIONS))}",
                )
            continue
        spec = " ".join(t for t in _spec_tokens(tokens))
        if needs_build(spec):
            raise _refuse(spec, where)


def _spec_tokens(tokens: list[str]) -> list[str]:
    """The requirement part of a line: the tokens before its first option (``--hash``)."""
    kept = []
    for token in tokens:
        if token.startswith("-"):
            break
        kept.append(token)
    return kept


def check(specs: tuple[str, ...], requirements: str | None) -> None:
    """Refuse, before pip runs, anything it would have to build."""
    for spec in specs:
        if needs_build(spec):
            raise _refuse(spec, "")
    if requirements is not None:
        check_requirements_file(requirements)
