"""pip underneath ``gigi install``: stage a candidate aside for review, then install for real.

Staging never runs package code: pip resolves wheels only (``install_screen`` refuses what
it would build), the chosen wheel files are fetched by hash and unpacked as plain files for
review, and the real install is those same files with ``--no-deps``. pip runs as ``sys.executable -m pip`` so packages land in the environment Gigi runs from;
it reads its usual configuration (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, pip.conf). A
failure raises one error carrying the tail of what pip said, and pip itself leaves the
installed version in place when an install fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gigi_core.errors import GigiError, ManifestError
from gigi_core.manifest.packaged import PackagedPlugin, plugin_distributions

PIP_TAIL_LINES = 12
NO_WHEEL_HINT = (
    "pip takes wheels only here (building from source would run the package's code before "
    "its review): check the name and version; a package published as source only needs its "
    "wheel built first, in a throwaway environment (`pip wheel --no-deps NAME -w wheels/`), "
    "then `gigi install wheels/NAME-VERSION-*.whl`"
)


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

    def pip_args(self, screened: Path | None = None) -> list[str]:
        """pip's arguments; ``screened``: the checked copy of the requirements file, read by
        pip instead of the file (so pip reads exactly the lines that were checked)."""
        args = list(self.specs)
        if self.requirements is not None:
            args += ["-r", str(screened or self.requirements)]
        if self.require_hashes:
            args.append("--require-hashes")
        return args

    def describe(self) -> str:
        parts = list(self.specs)
        if self.requirements is not None:
            parts.append(f"-r {self.requirements}")
        return " ".join(parts)


@dataclass(frozen=True)
class Wheel:
    """One wheel the stage resolved: the candidate itself or a dependency it pulls."""

    name: str
    version: str
    file: Path
    requested: bool  # named by the operator (else pulled in as a dependency)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "file": self.file.name,
            "dependency": not self.requested,
        }


@dataclass
class Staged:
    """Candidates fetched as wheel files into a private folder and unpacked there for
    review: nothing of them is importable by Gigi, and these files are what gets installed."""

    folder: tempfile.TemporaryDirectory[str]
    plugins: list[PackagedPlugin] = field(default_factory=list)
    wheels: list[Wheel] = field(default_factory=list)

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
    """Resolve the candidates and their dependencies against this environment as wheels
    only, fetch exactly those wheel files into a temporary folder and read the manifests
    from their unpacked copy (data files only: no package code is built or imported)."""
    from gigi_core.cli.install_screen import check

    lines = check(source.specs, source.requirements)  # before pip: nothing it would build
    folder = tempfile.TemporaryDirectory(prefix="gigi-review-")
    site = Path(folder.name) / "site"
    try:
        screened = None
        if lines is not None:
            screened = Path(folder.name) / "requirements.txt"
            # A UTF-8 byte-order mark: pip decodes by it, not by the locale or a coding line.
            screened.write_text("\ufeff" + lines, encoding="utf-8")
        wheels = _fetch(source, Path(folder.name), screened)
        for wheel in wheels:
            _unpack(wheel.file, site)
        plugins = plugin_distributions([site], known_capabilities=known_capabilities)
    except ManifestError as exc:
        folder.cleanup()
        raise CandidateError(
            f"{source.describe()} ships an invalid manifest, so it was not installed:\n"
            + "\n".join(f"  {_relative(p, str(site))}" for p in exc.problems),
            hint="the plugin's author fixes the file and field named; "
            "`gigi manifest validate FILE` checks it",
        ) from None
    except BaseException:
        folder.cleanup()
        raise
    for plugin in plugins:
        plugin.sources = [_relative(s, str(site)) for s in plugin.sources]
    return Staged(folder, plugins, wheels)


def _fetch(source: Source, folder: Path, screened: Path | None = None) -> list[Wheel]:
    """pip's resolution (``--dry-run``: nothing installed, wheels only), then the very files
    it chose, downloaded by URL and hash into ``folder/wheels``."""
    report = folder / "report.json"
    resolve = ["install", "--dry-run", "--upgrade", "--only-binary=:all:", "--quiet"]
    try:
        pip(
            [*resolve, "--report", str(report), *source.pip_args(screened)],
            doing=f"fetch {source.describe()} for review",
        )
    except PipError as exc:
        if "No matching distribution" not in exc.message:
            raise
        raise PipError(exc.message, hint=NO_WHEEL_HINT) from None
    items = _report_items(report)
    if not items:
        return []
    pins = folder / "pins.txt"
    pins.write_text("".join(f"{i.name} @ {i.url} --hash=sha256:{i.sha256}\n" for i in items))
    target = folder / "wheels"
    fetch = ["download", "--no-deps", "--only-binary=:all:", "--require-hashes", "--quiet"]
    pip(
        [*fetch, "-r", str(pins), "-d", str(target)],
        doing=f"fetch {source.describe()} for review",
    )
    from packaging.utils import canonicalize_name, parse_wheel_filename

    files = {canonicalize_name(parse_wheel_filename(f.name)[0]): f for f in target.glob("*.whl")}
    wheels = []
    for item in items:
        file = files.get(canonicalize_name(item.name))
        if file is None:
            raise PipError(f"pip did not fetch the wheel of {item.name} {item.version}")
        wheels.append(Wheel(item.name, item.version, file, item.requested))
    return wheels


@dataclass(frozen=True)
class _Item:
    name: str
    version: str
    url: str
    sha256: str
    requested: bool


def _report_items(report: Path) -> list[_Item]:
    """What pip's installation report would install; a wheel with a hash each, or an error
    (a build slipped past the checks: refuse rather than install what was built)."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PipError(f"pip wrote no readable installation report: {exc}") from None
    items = []
    for entry in data.get("install", []):
        meta, info = entry.get("metadata", {}), entry.get("download_info", {})
        name, version = str(meta.get("name", "?")), str(meta.get("version", "?"))
        url = str(info.get("url", ""))
        sha = info.get("archive_info", {}).get("hashes", {}).get("sha256")
        if not url.split("#", 1)[0].lower().endswith(".whl") or not sha:
            raise PipError(
                f"{name} {version} resolved to something that is not a wheel ({url or 'no URL'})",
                hint="install from wheels only: build one first (`pip wheel --no-deps`)",
            )
        items.append(_Item(name, version, url, str(sha), bool(entry.get("requested"))))
    return items


def _unpack(wheel: Path, site: Path) -> None:
    """A wheel's files laid out as an install would (its ``.data`` payloads aside): enough
    to read its metadata and manifests. zipfile keeps every member inside ``site``."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)


def _relative(text: str, folder: str) -> str:
    """Name files inside the package (``pkg/gigi.yaml``), not the throwaway folder."""
    return text.replace(str(Path(folder).resolve()) + "/", "").replace(folder + "/", "")


def install(staged: Staged) -> None:
    """The real install into the running environment: exactly the reviewed wheel files,
    nothing resolved or fetched again (pip keeps the old version on failure)."""
    files = [str(w.file) for w in staged.wheels]
    if files:
        names = ", ".join(f"{w.name} {w.version}" for w in staged.wheels)
        pip(["install", "--no-deps", "--upgrade", *files], doing=f"install {names}")


def uninstall(distribution: str) -> None:
    pip(["uninstall", "--yes", distribution], doing=f"uninstall {distribution}")


def outdated() -> dict[str, str]:
    """Distribution name -> the newer version the index offers (pip's own answer)."""
    out = pip(["list", "--outdated", "--format", "json"], doing="list outdated packages")
    try:
        rows = json.loads(out or "[]")
    except ValueError as exc:
        raise PipError(f"pip list printed something that is not JSON: {exc}") from None
    return {str(r["name"]): str(r["latest_version"]) for r in rows if "latest_version" in r}


def folder_of(staged: Staged) -> Path:
    return Path(staged.folder.name)
