"""Manifests a distribution ships as data files, read without importing any of its code.

A candidate plugin is reviewed before it is active, so its manifests are found among the
distribution's recorded files (``gigi.yaml``, or any YAML file starting a line with
``manifest_version:``) and validated like the loader does, errors naming file, line and field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from gigi_core.errors import ManifestError
from gigi_core.manifest.loader import load_manifest
from gigi_core.manifest.models import Manifest

ENTRY_POINT_GROUP = "gigi"
_MARKER = re.compile(r"^manifest_version\s*:", re.MULTILINE)


@dataclass
class PackagedPlugin:
    """One distribution that registers ``gigi`` entry points, and the manifests it ships."""

    distribution: str
    version: str
    entry_points: tuple[str, ...]
    manifests: list[Manifest] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the manifest files, for messages
    problems: list[str] = field(default_factory=list)  # only when read with strict=False

    @property
    def key(self) -> str:
        return canonical(self.distribution)


def canonical(name: str) -> str:
    """PEP 503 normalised name: how pip and importlib compare distribution names."""
    return re.sub(r"[-_.]+", "-", name).lower()


def plugin_distributions(
    paths: Iterable[str | Path] | None = None,
    *,
    known_capabilities: Iterable[str] = (),
    strict: bool = True,
) -> list[PackagedPlugin]:
    """Every distribution on ``paths`` (default: the running environment) with a ``gigi``
    entry point, its manifests validated; raises ManifestError naming each bad file, or with
    ``strict=False`` keeps such a plugin with its ``problems`` (one broken plugin must not
    stop `gigi uninstall` or `gigi plugins outdated` for the others, or for itself)."""
    search = None if paths is None else [str(p) for p in paths]
    found: dict[str, PackagedPlugin] = {}
    for dist in metadata.distributions(path=search) if search else metadata.distributions():
        plugin = packaged(dist, known_capabilities=known_capabilities, strict=strict)
        if plugin is not None and plugin.key not in found:  # first on the path wins
            found[plugin.key] = plugin
    return sorted(found.values(), key=lambda p: p.key)


def installed(name: str, *, known_capabilities: Iterable[str] = ()) -> PackagedPlugin | None:
    """The running environment's distribution ``name``, if installed and a Gigi plugin."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return packaged(dist, known_capabilities=known_capabilities)


def packaged(
    dist: metadata.Distribution, *, known_capabilities: Iterable[str] = (), strict: bool = True
) -> PackagedPlugin | None:
    """The plugin view of one distribution, None when it registers no ``gigi`` entry point."""
    names = tuple(sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP))
    if not names:
        return None
    plugin = PackagedPlugin(dist.metadata["Name"], dist.version, names)
    problems: list[str] = []
    for path in manifest_files(dist):
        try:
            loaded = load_manifest(str(path), known_capabilities=known_capabilities)
        except ManifestError as exc:
            problems += exc.problems
            continue
        plugin.manifests.append(loaded.manifest)
        plugin.sources.append(str(path))
    if problems and strict:
        raise ManifestError(problems)
    plugin.problems = problems
    return plugin


def manifest_files(dist: metadata.Distribution) -> list[Path]:
    """The distribution's packaged manifest files (none when it records no file list)."""
    found = []
    for item in dist.files or ():
        if item.suffix not in (".yaml", ".yml") or any(p == "tests" for p in item.parts):
            continue
        path = Path(str(dist.locate_file(item)))
        if item.name == "gigi.yaml":
            found.append(path)
            continue
        try:
            head = path.read_text("utf-8")[:4096]
        except (OSError, UnicodeDecodeError):
            continue
        if _MARKER.search(head):
            found.append(path)
    return sorted(found)
