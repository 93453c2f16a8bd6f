"""A cache of validated manifests keyed by content, so CLI start-up skips YAML and validation."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gigi_core.manifest.models import (
    ActionSpec,
    CapabilitySpec,
    ConfirmRule,
    Manifest,
    PluginSpec,
    Safety,
)

log = logging.getLogger(__name__)
FORMAT = 1  # bump when the models change shape


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
            tmp.write_text(json.dumps(manifest.model_dump(mode="json")))
            tmp.replace(self.folder / f"{key}.json")
        except OSError:
            log.debug("cannot write manifest cache in %s", self.folder, exc_info=True)


def _construct(data: dict[str, Any]) -> Manifest:
    """Rebuild already-validated data without running validators (it passed them when cached)."""
    plugin = dict(data["plugin"])
    plugin["capabilities"] = tuple(
        CapabilitySpec.model_construct(**c) for c in plugin["capabilities"]
    )
    for key in ("discord_permissions", "intents"):
        plugin[key] = tuple(plugin[key])
    actions = []
    for raw in data["actions"]:
        action = dict(raw)
        action["safety"] = Safety(action["safety"])
        action["confirm"] = ConfirmRule(action["confirm"])
        actions.append(ActionSpec.model_construct(**action))
    return Manifest.model_construct(
        manifest_version=data["manifest_version"],
        plugin=PluginSpec.model_construct(**plugin),
        actions=tuple(actions),
    )
