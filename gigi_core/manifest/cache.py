"""A cache of validated manifests keyed by content, so start-up skips YAML and validation.

Two layers: a process-wide memory layer (every kernel, CLI command and test kernel of the
process shares it) and, when a folder is given, files under ``GIGI_HOME/cache/manifests``
that outlive the process. A key names everything the result depends on, so a changed file,
kernel, capability set or YAML limit is a new key and is validated again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gigi_core.manifest.models import Manifest

log = logging.getLogger(__name__)
FORMAT = 2  # bump when the models change shape
MEMORY_ENTRIES = 4096  # the memory layer forgets everything past this (a runaway test loop)
_MEMORY: dict[str, str] = {}  # key -> the manifest as JSON (each hit builds its own objects)


class ManifestCache:
    """Validated manifests by a hash of (text, kernel version, known capabilities, limits)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder

    def key(self, text: str, known_capabilities: Iterable[str], kernel_version: str) -> str:
        from gigi_core.yamlfile import limits

        digest = hashlib.sha256()
        parts = (
            str(FORMAT),
            kernel_version,
            ",".join(sorted(known_capabilities)),
            ",".join(map(str, limits())),  # a file refused under lower limits stays refused
            text,
        )
        for part in parts:
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def get(self, key: str) -> Manifest | None:
        raw = _MEMORY.get(key)
        try:
            if raw is None:
                if self.folder is None:
                    return None
                raw = (self.folder / f"{key}.json").read_text()
                manifest = _construct(json.loads(raw))
                _remember(key, raw)
                return manifest
            return _construct(json.loads(raw))
        except FileNotFoundError:
            return None
        except Exception:  # a corrupt entry is a miss, never an error
            log.debug("ignoring unreadable manifest cache entry %s", key, exc_info=True)
            return None

    def put(self, key: str, manifest: Manifest) -> None:
        try:
            raw = json.dumps(manifest.to_dict())
        except (TypeError, ValueError):  # a value JSON cannot hold: validated on every load
            log.debug("manifest %s is not cacheable", manifest.name, exc_info=True)
            return
        _remember(key, raw)
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{key}.{os.getpid()}.tmp"
            tmp.write_text(raw)
            tmp.replace(self.folder / f"{key}.json")
        except OSError:
            log.debug("cannot write manifest cache in %s", self.folder, exc_info=True)


def clear_memory() -> None:
    """Forget the memory layer (tests that exercise the files)."""
    _MEMORY.clear()


def _remember(key: str, raw: str) -> None:
    if len(_MEMORY) >= MEMORY_ENTRIES:
        _MEMORY.clear()
    _MEMORY[key] = raw


def _construct(data: dict[str, Any]) -> Manifest:
    """Rebuild already-validated data (it passed the validators when it was cached)."""
    return Manifest.from_dict(data)
