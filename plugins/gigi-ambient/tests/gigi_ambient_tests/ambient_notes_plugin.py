"""An in-process plugin with two write actions: ``notes.add`` needs a confirmation (its
manifest's safety-class default), ``notes.tag`` does not (``confirm: never``) unless a test
turns on the plugin's own policy veto asking for one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: notes
  version: 0.0.1
  description: Channel notes.
  data_statement: Stores nothing.
  capabilities:
    - {name: notes.use, description: Write notes, default: everyone}
actions:
  - {name: notes.add, description: Add a note, safety: write, capability: notes.use,
     args: {type: object}}
  - {name: notes.tag, description: Tag a message, safety: write, capability: notes.use,
     confirm: never, args: {type: object}}
"""


class Notes:
    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "notes.yaml"
        self.path.write_text(MANIFEST)
        self.ran: list[str] = []
        self.confirm_tags = False  # the plugin's policy asks for a confirmation of notes.tag

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("notes.add", self._handler("notes.add"))
        register("notes.tag", self._handler("notes.tag"))

    @hookimpl
    def check_tool_call(self, call: Any, actor: Any, action: Any, kernel: Any) -> Any:
        return "confirm" if self.confirm_tags and action.name == "notes.tag" else None

    def _handler(self, name: str) -> Any:
        async def handler(ctx: Any) -> dict[str, Any]:
            self.ran.append(name)
            return {"done": name}

        return handler
