"""An in-process plugin for the hardening tests: one manifest, handlers that record their arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gigi_core import hookimpl

DEFAULT_ARGS: dict[str, Any] = {"type": "object"}
DEFAULT_CONFIG: dict[str, Any] = {
    "type": "object",
    "properties": {"token": {"type": "string", "x-gigi-secret": True}, "units": {"type": "string"}},
}

MANIFEST = """\
manifest_version: 1
plugin:
  name: {name}
  version: 0.0.1
  description: Hardening test plugin.
  data_statement: Stores nothing.
  config_schema: {config}
  capabilities:
    - {{name: {name}.use, description: Use it, default: everyone}}
actions:
  - {{name: {name}.echo, description: Echo, safety: read_only, capability: {name}.use,
     confirm: never, args: {args}}}
  - {{name: {name}.act, description: An effect outside Discord, safety: external,
     capability: {name}.use, confirm: never, args: {{type: object}}}}
"""


class Kit:
    """``kit.echo`` returns (and records) the keyword arguments it was handed."""

    def __init__(
        self,
        tmp_path: Path,
        name: str = "kit",
        *,
        args: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        manifest: str | None = None,
    ) -> None:
        self.name = name
        self.path = tmp_path / f"{name}.yaml"
        self.path.write_text(
            manifest
            if manifest is not None
            else MANIFEST.format(
                name=name,
                args=json.dumps(args or DEFAULT_ARGS),
                config=json.dumps(config or DEFAULT_CONFIG),
            )
        )
        self.seen: list[dict[str, Any]] = []
        self.acted = 0

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        register(f"{self.name}.echo", self.echo)
        register(f"{self.name}.act", self.act)

    async def echo(self, ctx, **kwargs):
        self.seen.append(kwargs)
        return {"args": kwargs, "types": {k: type(v).__name__ for k, v in kwargs.items()}}

    async def act(self, ctx):
        self.acted += 1
        return {"done": True}
