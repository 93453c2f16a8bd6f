"""pip underneath ``gigi install``: stage a candidate aside for review, then install for real.

pip runs as ``sys.executable -m pip`` so packages land in the environment Gigi runs from;
it reads its usual configuration (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, pip.conf). A
failure raises one error carrying the tail of what pip said, and pip itself leaves the
installed version in place when an install fails.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gigi_core.errors import GigiError, ManifestError
from gigi_core.manifest.packaged import PackagedPlugin, plugin_distributions

PIP_TAIL_LINES = 12


class PipError(GigiError):
    """pip exited with an error; the message ends with what pip said."""


class CandidateError(GigiError):
    """A candidate distribution cannot be reviewed (its manifest is invalid)."""


@dataclass(frozen=True)
class Source:
    """What to install: package specs, paths or URLs, or a requirements file."""

    specs: tuple[str, ...] = ()
    requirements: str | None = None
    require_hashes: bool = False

    def pip_args(self) -> list[str]:
        args = list(self.specs)
        if self.requirements is not None:
            args += ["-r", self.requirements]
        if self.require_hashes:
            args.append("--require-hashes")
        return args

    def describe(self) -> str:
        parts = list(self.specs)
        if self.requirements is not None:
            parts.append(f"-r {self.requirements}")
        return " ".join(parts)


@dataclass
class Staged:
    """Candidates installed into a private folder: nothing of them is importable by Gigi."""

    folder: tempfile.TemporaryDirectory[str]
    plugins: list[PackagedPlugin] = field(default_factory=list)

    def close(self) -> None:
        self.folder.cleanup()


def pip(args: Iterable[str], *, doing: str) -> str:
    """Run pip; its output on success, a PipError with the tail of its errors otherwise."""
    command = [
        sys.executable,
        "-m",
        "pip",
        *args,
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
    ]
    if args and next(iter(args)) in ("list", "uninstall", "show"):
        command.remove("--progress-bar")
        command.remove("off")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PipError(f"pip could not {doing}:\n{tail(done.stderr or done.stdout)}")
    return done.stdout


def tail(text: str, lines: int = PIP_TAIL_LINES) -> str:
    """pip's last lines, where it says what went wrong (its progress comes before)."""
    kept = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return "\n".join(f"  {line}" for line in kept[-lines:]) or "  (pip printed nothing)"


def stage(source: Source, known_capabilities: Iterable[str]) -> Staged:
    """Install the candidates without dependencies into a temporary folder and read their
    manifests from there (data files only: no plugin code is imported)."""
    folder = tempfile.TemporaryDirectory(prefix="gigi-review-")
    try:
        pip(
            ["install", "--no-deps", "--target", folder.name, *source.pip_args()],
            doing=f"fetch {source.describe()} for review",
        )
        plugins = plugin_distributions([folder.name], known_capabilities=known_capabilities)
    except ManifestError as exc:
        folder.cleanup()
        raise CandidateError(
            f"{source.describe()} ships an invalid manifest, so it was not installed:\n"
            + "\n".join(f"  {_relative(p, folder.name)}" for p in exc.problems),
            hint="the plugin's author fixes the file and field named; "
            "`gigi manifest validate FILE` checks it",
        ) from None
    except PipError:
        folder.cleanup()
        raise
    for plugin in plugins:
        plugin.sources = [_relative(s, folder.name) for s in plugin.sources]
    return Staged(folder, plugins)


def _relative(text: str, folder: str) -> str:
    """Name files inside the package (``pkg/gigi.yaml``), not the throwaway folder."""
    return text.replace(str(Path(folder).resolve()) + "/", "").replace(folder + "/", "")


def pinned(source: Source, staged: Staged) -> Source:
    """The same source with each requirement by name pinned to the version reviewed, so the
    real install cannot pick a newer release than the one shown (paths and URLs are fixed)."""
    from packaging.requirements import InvalidRequirement, Requirement

    from gigi_core.manifest.packaged import canonical

    versions = {p.key: p.version for p in staged.plugins}
    specs = []
    for spec in source.specs:
        try:
            req = Requirement(spec)
        except InvalidRequirement:  # a path or a URL
            specs.append(spec)
            continue
        version = versions.get(canonical(req.name))
        if req.url or version is None:
            specs.append(spec)
            continue
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        specs.append(f"{req.name}{extras}=={version}")
    return Source(tuple(specs), source.requirements, source.require_hashes)


def install(source: Source, *, upgrade: bool = False) -> None:
    """The real install into the running environment (pip keeps the old version on failure)."""
    args = ["install", *(["--upgrade"] if upgrade else []), *source.pip_args()]
    pip(args, doing=f"install {source.describe()}")


def uninstall(distribution: str) -> None:
    pip(["uninstall", "--yes", distribution], doing=f"uninstall {distribution}")


def outdated() -> dict[str, str]:
    """Distribution name -> the newer version the index offers (pip's own answer)."""
    import json

    out = pip(["list", "--outdated", "--format", "json"], doing="list outdated packages")
    try:
        rows = json.loads(out or "[]")
    except ValueError as exc:
        raise PipError(f"pip list printed something that is not JSON: {exc}") from None
    return {str(r["name"]): str(r["latest_version"]) for r in rows if "latest_version" in r}


def folder_of(staged: Staged) -> Path:
    return Path(staged.folder.name)
