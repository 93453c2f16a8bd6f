"""An in-process plugin with one blocking (synchronous) tool, like seed 003's IGDB lookups."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: lookup
  version: 0.0.1
  description: A blocking game lookup.
  data_statement: Stores nothing.
  capabilities:
    - {name: lookup.use, description: Look games up, default: everyone}
actions:
  - {name: lookup.game, description: Find a game by title, safety: read_only, capability: lookup.use,
     confirm: never, args: {type: object, properties: {title: {type: string}}, required: [title],
     additionalProperties: false}}
"""


class Lookup:
    def __init__(self, tmp_path: Path, seconds: float = 0.0, *, default: str = "everyone") -> None:
        self.path = tmp_path / "lookup.yaml"
        self.path.write_text(MANIFEST.replace("default: everyone", f"default: {default}"))
        self.seconds = seconds
        self.threads: list[str] = []

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("lookup.game", self.game)

    def game(self, ctx: Any, title: str) -> dict[str, Any]:
        """Synchronous on purpose: the kernel must run it in a worker thread."""
        self.threads.append(threading.current_thread().name)
        time.sleep(self.seconds)
        return {"title": title, "year": 1998}
