"""A cache of validated manifests keyed by content, so CLI start-up skips YAML and validation."""

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


class ManifestCache:
    """Files under ``folder`` named by a hash of (text, kernel version, known capabilities)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def key(self, text: str, known_capabilities: Iterable[str], kernel_version: str) -> str:
        digest = hashlib.sha256()
        for part in (str(FORMAT), kernel_version, ",".join(sorted(known_capabilities)), text):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def get(self, key: str) -> Manifest | None:
        try:
            data = json.loads((self.folder / f"{key}.json").read_text())
            return _construct(data)
        except FileNotFoundError:
            return None
        except Exception:  # a corrupt entry is a miss, never an error
            log.debug("ignoring unreadable manifest cache entry %s", key, exc_info=True)
            return None

    def put(self, key: str, manifest: Manifest) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{key}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(manifest.to_dict()))
            tmp.replace(self.folder / f"{key}.json")
        except OSError:
            log.debug("cannot write manifest cache in %s", self.folder, exc_info=True)


def _construct(data: dict[str, Any]) -> Manifest:
    """Rebuild already-validated data (it passed the validators when it was cached)."""
    return Manifest.from_dict(data)
