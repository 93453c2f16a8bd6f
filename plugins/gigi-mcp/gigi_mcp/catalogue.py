"""Which generated action is which server tool: built when plugins load, cached on disk.

Importing this module is cheap (standard library only), and so is loading a catalogue whose
sources did not change: ``gigi plugins list`` with MCP servers attached parses no pydantic
model, dumps no YAML and compiles no schema. A change to the servers file, a pin file or a
generated manifest rebuilds it.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
GENERATOR = "4"  # bump when generated manifests change shape, so caches are rebuilt


@dataclass(frozen=True)
class ToolEntry:
    """One generated action and the server tool behind it."""

    action: str
    server: str
    tool: str  # the server's own name, sent on tools/call
    status: str  # pending | approved | changed | new | refused
    safety: str
    confirm: str
    why: str
    basis: str | None = None  # hash of the definition the manifest declares; None: none to call
    refused: str | None = None  # why its definition can never be offered (gigi_mcp.invisible)


@dataclass
class Catalogue:
    """What one plugin load generated: manifests on disk and their actions."""

    root: Path
    entries: dict[str, ToolEntry] = field(default_factory=dict)
    manifests: dict[str, Path] = field(default_factory=dict)
    structured: set[str] = field(default_factory=set)  # actions with a result schema
    errors: dict[str, str] = field(default_factory=dict)  # server -> why it was left out


def mcp_home(home: str | Path | None = None) -> Path:
    """``GIGI_HOME/mcp``: read from the environment because registration hooks get no kernel."""
    if home is None:
        home = os.environ.get("GIGI_HOME")
    if not home:
        from platformdirs import user_data_dir

        home = user_data_dir("gigi", appauthor=False)
    return Path(home).expanduser() / "mcp"


def cache_path(root: Path) -> Path:
    return root / "manifests" / "catalogue.json"


def signature(root: Path) -> list[list[Any]]:
    """Name, size and mtime of every file a catalogue is built from, and the knobs."""
    files = [root / "servers.json"]
    for folder, pattern in (("pins", "*.json"), ("manifests", "mcp_*.yaml")):
        files += sorted((root / folder).glob(pattern))
    out: list[list[Any]] = [
        [GENERATOR]
        + [
            os.environ.get(f"GIGI_MCP_{knob}", "")
            for knob in ("DESCRIPTION_MAX_CHARS", "SCHEMA_MAX_CHARS", "MAX_TOOLS")
        ],
    ]
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        out.append([str(path.relative_to(root)), st.st_size, st.st_mtime_ns])
    return out


def load_catalogue(root: Path) -> Catalogue:
    """The cached catalogue when its sources are unchanged, else a fresh build."""
    if not (root / "servers.json").exists():
        return Catalogue(root)
    cached = _read_cache(root)
    if cached is not None:
        return cached
    from gigi_mcp.bridge import build_catalogue

    cat = build_catalogue(root)
    _write_cache(root, cat)
    return cat


def _read_cache(root: Path) -> Catalogue | None:
    try:
        data = json.loads(cache_path(root).read_text(encoding="utf-8"))
        if data.get("signature") != signature(root):
            return None
        return Catalogue(
            root,
            entries={e["action"]: ToolEntry(**e) for e in data["entries"]},
            manifests={k: root / v for k, v in data["manifests"].items()},
            structured=set(data["structured"]),
            errors=dict(data["errors"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(root: Path, cat: Catalogue) -> None:
    data = {
        "entries": [asdict(e) for e in cat.entries.values()],
        "manifests": {k: str(v.relative_to(root)) for k, v in cat.manifests.items()},
        "structured": sorted(cat.structured),
        "errors": cat.errors,
    }
    try:
        path = cache_path(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        data["signature"] = signature(root)  # after the manifests were written
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        log.info("gigi-mcp: cannot cache the catalogue (%s)", exc)
