"""Load manifest YAML with ruamel.yaml so every problem is reported as PATH:LINE: field: message."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gigi_core.errors import ManifestError
from gigi_core.manifest.cache import ManifestCache
from gigi_core.manifest.checks import semantic_problems
from gigi_core.manifest.models import Manifest
from gigi_core.yamlfile import YamlSyntaxError, load_all, load_fast, plain, problem


class Readable(Protocol):
    def read_text(self, encoding: str = ...) -> str: ...


@dataclass(frozen=True)
class LoadedManifest:
    """A validated manifest and where it came from."""

    manifest: Manifest
    source: str


def load_manifest(
    source: Path | Readable | str,
    *,
    known_capabilities: Iterable[str] = (),
    kernel_version: str | None = None,
    cache: ManifestCache | None = None,
) -> LoadedManifest:
    """Parse and validate one manifest file; raise ManifestError listing every problem."""
    if kernel_version is None:
        from gigi_core import __version__ as kernel_version
    known_capabilities = tuple(known_capabilities)
    name = str(source)
    try:
        text = Path(source).read_text("utf-8") if isinstance(source, str) else source.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError([f"{name}: cannot read manifest: {exc}"]) from exc
    key = cache.key(text, known_capabilities, kernel_version) if cache else ""
    if cache and (hit := cache.get(key)) is not None:
        return LoadedManifest(manifest=hit, source=name)
    loaded = _validate(name, text, known_capabilities, kernel_version)
    if cache:
        cache.put(key, loaded.manifest)
    return loaded


def _validate(
    name: str, text: str, known_capabilities: Iterable[str], kernel_version: str
) -> LoadedManifest:
    """The fast parse for a manifest that is fine; the line-tracking one to say what is wrong."""
    documents = load_fast(text)
    if documents is not None and len(documents) == 1 and isinstance(documents[0], dict):
        try:
            manifest = _checked(documents[0], known_capabilities, kernel_version)
        except Exception:  # reported below, with file, line and field
            manifest = None
        if manifest is not None:
            return LoadedManifest(manifest=manifest, source=name)
    return _validate_with_lines(name, text, known_capabilities, kernel_version)


def _checked(data: Any, known_capabilities: Iterable[str], kernel_version: str) -> Manifest | None:
    """The manifest when it passes every check, else None; the problems are not described."""
    from gigi_core.manifest.validation import Manifest as ManifestModel

    manifest = Manifest.from_dict(ManifestModel.model_validate(plain(data)).model_dump())
    if semantic_problems(manifest, known_capabilities, kernel_version):
        return None
    return manifest


def _validate_with_lines(
    name: str, text: str, known_capabilities: Iterable[str], kernel_version: str
) -> LoadedManifest:
    from pydantic import ValidationError

    from gigi_core.manifest.validation import Manifest as ManifestModel

    try:
        documents = load_all(text)
    except YamlSyntaxError as exc:
        raise ManifestError([f"{name}:{exc.line}: {exc}"]) from exc
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ManifestError([f"{name}:1: a manifest must be one YAML mapping"])
    data = documents[0]
    try:
        manifest = Manifest.from_dict(ManifestModel.model_validate(plain(data)).model_dump())
    except ValidationError as exc:
        problems = [
            problem(name, data, tuple(err["loc"]), err["msg"], err["type"], "(manifest)")
            for err in exc.errors(include_url=False)
        ]
        raise ManifestError(problems) from None
    problems = [
        problem(name, data, loc, msg, "semantic", "(manifest)")
        for loc, msg in semantic_problems(manifest, known_capabilities, kernel_version)
    ]
    if problems:
        raise ManifestError(problems)
    return LoadedManifest(manifest=manifest, source=name)
