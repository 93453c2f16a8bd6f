"""A small in-process plugin for the Discord tests: a read, a write that needs a
confirmation, and a read of a named channel (checked against Discord permissions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: notes
  version: 0.0.1
  description: Count and add notes.
  data_statement: Keeps notes in memory for the test.
  config_schema:
    type: object
    properties:
      prefix: {type: string}
    additionalProperties: false
  capabilities:
    - {name: notes.use, description: Read and add notes, default: everyone}
actions:
  - name: notes.count
    description: Count the notes.
    safety: read_only
    capability: notes.use
    args: {type: object, properties: {}, additionalProperties: false}
  - name: notes.add
    description: Add a note
    safety: write
    capability: notes.use
    args:
      type: object
      properties: {text: {type: string, maxLength: 100}}
      required: [text]
      additionalProperties: false
  - name: notes.peek
    description: Peek at a channel.
    safety: read_only
    capability: notes.use
    args:
      type: object
      properties: {channel: {type: string, x-gigi-channel: true}}
      required: [channel]
      additionalProperties: false
"""


class Notes:
    """Records every executed call so tests can prove what ran, and how often."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "notes.yaml"
        self.path.write_text(MANIFEST)
        self.notes: list[str] = ["a", "b", "c"]
        self.ran: list[str] = []
        self.visible: list[frozenset[str] | None] = []  # what each count saw of the guild

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("notes.count", self.count)
        register("notes.add", self.add)
        register("notes.peek", self.peek)

    async def count(self, ctx: Any) -> dict[str, Any]:
        self.ran.append("notes.count")
        self.visible.append(await ctx.visible_channels())
        return {"count": len(self.notes)}

    async def add(self, ctx: Any, text: str) -> dict[str, Any]:
        self.ran.append("notes.add")
        self.notes.append(text)
        return {"added": text, "count": len(self.notes)}

    async def peek(self, ctx: Any, channel: str) -> dict[str, Any]:
        self.ran.append("notes.peek")
        return {"channel": channel, "ok": True}
