"""What ``gigi install`` hands pip, checked before pip runs: wheels and index names only.

pip builds a folder, a source archive or a VCS/URL checkout by running the package's own
build backend, and ``--only-binary=:all:`` does not stop that for a path or URL named
explicitly. Building would run the candidate's code before anyone reviewed it, so such a
spec (on the command line or in ``-r FILE``) is refused here, naming how to build a wheel.
"""

from __future__ import annotations

import os
import re
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
#: (``--only-binary`` is not one: ``--only-binary=:none:`` turns pip's wheels-only off.)
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
        "--require-hashes",
    }
)
#: Options a requirement's own line may carry (pip also takes build settings there).
LINE_OPTIONS = frozenset({"--hash"})
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


#: pip's comment rule (``req_file.COMMENT_RE``): ``#`` at the start or after whitespace.
COMMENT_RE = re.compile(r"(^|\s+)#.*$")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """A requirements file's lines as pip reads them, in pip's order (``req_file.preprocess``):
    continuations joined, where a comment line ends a continuation, then comments dropped."""
    joined: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        comment = COMMENT_RE.match(raw) is not None
        if not raw.endswith("\\") or comment:
            line = " " + raw if comment else raw
            if pending:
                joined.append((start, "".join([*pending, line])))
                pending = []
            else:
                joined.append((number, line))
        else:
            if not pending:
                start = number
            pending.append(raw.strip("\\"))
    if pending:
        joined.append((start, "".join(pending)))
    out = []
    for number, line in joined:
        kept = COMMENT_RE.sub("", line).strip()
        if kept:
            out.append((number, kept))
    return out


def check_requirements_file(path: str) -> str:
    """Refuse a requirements file with anything pip would build, nested files, editable or
    ``--no-binary`` lines, or environment variables (they could name any of those); return
    the screened lines, one a line, for pip to read instead of the file itself."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else exc.strerror or exc
        raise GigiError(
            f"cannot read the requirements file {path}: {reason}",
            hint="check the path given to -r; the file must be UTF-8 text",
        ) from None
    screened = [_screen_line(path, number, line) for number, line in _logical_lines(text)]
    return "".join(f"{line}\n" for line in screened)


def _screen_line(path: str, number: int, line: str) -> str:
    """One logical line, checked; returned as pip will read it from the screened file."""
    where = f"{path} line {number}: "
    if "${" in line:
        raise SourceBuildError(
            f"{where}environment variables are not expanded by gigi install",
            hint="write the value itself into the requirements file",
        )
    if line.endswith("\\"):
        raise SourceBuildError(
            f"{where}a line may not end with a backslash here",
            hint="write the requirement and its options on one line, or end the line otherwise",
        )
    args, options = _break_args_options(line)
    try:
        tokens = shlex.split(options, posix=True)
    except ValueError as exc:
        raise SourceBuildError(
            f"{where}cannot read its options ({exc})", hint="close the quote on that line"
        ) from None
    allowed = LINE_OPTIONS if args else FILE_OPTIONS
    for token in tokens:
        option = token.split("=", 1)[0]
        if token.startswith("-") and option not in allowed:
            raise SourceBuildError(
                f"{where}{option} is not accepted in a file for gigi install (nested files, "
                "editable installs and build settings could run a package's code before its "
                "review)",
                hint="list each requirement in this one file as NAME==VERSION or a wheel "
                "(with --hash); accepted options: " + ", ".join(sorted(FILE_OPTIONS)),
            )
    if args and needs_build(args):
        raise _refuse(args, where)
    return line if args else shlex.join(_find_links_absolute(path, tokens))


def _find_links_absolute(path: str, tokens: list[str]) -> list[str]:
    """pip looks for a ``--find-links`` folder beside the requirements file first; the
    screened copy lives elsewhere, so such a folder is named by its absolute path."""
    folder = Path(path).resolve().parent
    out = list(tokens)
    for i, token in enumerate(tokens):
        option, _, value = token.partition("=")
        if option not in ("-f", "--find-links"):
            continue
        index = i if "=" in token else i + 1
        value = value if "=" in token else (tokens[i + 1] if i + 1 < len(tokens) else "")
        if value and "://" not in value and (folder / value).exists():
            absolute = str(folder / value)
            out[index] = f"{option}={absolute}" if "=" in token else absolute
    return out


def _break_args_options(line: str) -> tuple[str, str]:
    """pip's own split (``req_file.break_args_options``): the requirement is every
    space-separated token before the first one starting with ``-``; the rest are options."""
    tokens = line.split(" ")
    args: list[str] = []
    for token in tokens:
        if token.startswith("-"):
            break
        args.append(token)
    return " ".join(args).strip(), " ".join(tokens[len(args) :])


def check(specs: tuple[str, ...], requirements: str | None) -> str | None:
    """Refuse, before pip runs, anything it would have to build; the requirements file's
    screened lines (what pip is handed instead of the file), or None without one."""
    for spec in specs:
        if needs_build(spec):
            raise _refuse(spec, "")
    return None if requirements is None else check_requirements_file(requirements)
