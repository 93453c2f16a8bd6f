"""An in-process image plugin: its action implements ``ambient.picture`` by declaring it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: painter
  version: 0.0.1
  description: Paints pictures.
  data_statement: Stores nothing.
  capabilities:
    - {name: painter.use, description: Paint, default: everyone}
actions:
  - name: painter.draw
    description: Paint pictures from a prompt.
    safety: write
    capability: painter.use
    confirm: CONFIRM
    offer_to_model: false
    args:
      type: object
      x-gigi-implements: ambient.picture
      properties:
        prompt: {type: string}
        count: {type: integer}
        source_message_id: {type: string}
      required: [prompt]
      additionalProperties: false
"""


class Painter:
    def __init__(self, tmp_path: Path, *, confirm: str = "never", urls: Any = None) -> None:
        self.path = tmp_path / "painter.yaml"
        self.path.write_text(MANIFEST.replace("CONFIRM", confirm))
        self.calls: list[dict[str, Any]] = []
        self.urls = urls

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("painter.draw", self.draw)

    async def draw(self, ctx: Any, **args: Any) -> dict[str, Any]:
        self.calls.append({"actor": ctx.actor.id, **args})
        if self.urls is not None:
            return {"urls": self.urls}
        return {"urls": [f"https://img.example/{n}.png" for n in range(args.get("count", 1))]}
