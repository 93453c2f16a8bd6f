"""Load manifest YAML with ruamel.yaml so every problem is reported as PATH:LINE: field: message."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gigi_core.errors import ManifestError
from gigi_core.manifest.cache import ManifestCache
from gigi_core.manifest.checks import Loc, semantic_problems
from gigi_core.manifest.models import Manifest


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
    from pydantic import ValidationError
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise ManifestError([f"{name}:{line}: {exc.problem or exc.context}"]) from exc
    except YAMLError as exc:
        raise ManifestError([f"{name}:1: {exc}"]) from exc
    if not isinstance(data, dict):
        raise ManifestError([f"{name}:1: a manifest must be a YAML mapping"])
    try:
        manifest = Manifest.model_validate(_plain(data))
    except ValidationError as exc:
        problems = [
            _format(name, data, tuple(err["loc"]), err["msg"], err["type"])
            for err in exc.errors(include_url=False)
        ]
        raise ManifestError(problems) from None
    problems = [
        _format(name, data, loc, msg, "semantic")
        for loc, msg in semantic_problems(manifest, known_capabilities, kernel_version)
    ]
    if problems:
        raise ManifestError(problems)
    return LoadedManifest(manifest=manifest, source=name)


def _plain(node: Any) -> Any:
    """Turn ruamel's commented containers into plain dicts and lists for pydantic."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _format(name: str, data: Any, loc: Loc, msg: str, kind: str) -> str:
    loc = tuple(p for p in loc if not (isinstance(p, str) and "[" in p))  # drop union tags
    field = ".".join(str(p) for p in loc) or "(manifest)"
    if kind == "missing":
        msg = "required field is missing"
    elif kind == "extra_forbidden":
        msg = "unknown field"
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{name}:{_line_of(data, loc)}: {field}: {msg}"


def _line_of(data: Any, loc: Loc) -> int:
    """The 1-based line of the deepest part of ``loc`` present in the YAML document."""
    line = 0
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
