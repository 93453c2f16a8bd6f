"""An in-process plugin for the dashboard tests: settings with a secret, and untrusted HTML
in its description and data statement (which every page must escape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: webnotes
  version: 0.0.1
  description: "Notes <script>alert('desc')</script> for the dashboard tests."
  data_statement: "Keeps <img src=x onerror=alert('data')> nothing about members."
  config_schema:
    type: object
    properties:
      units: {type: integer, minimum: 1, maximum: 10, title: Units, description: How many notes.}
      style: {type: string, enum: [plain, fancy]}
      greeting: {type: string, maxLength: 20}
      loud: {type: boolean}
      api_key: {type: string, minLength: 8, x-gigi-secret: true, title: API key}
    required: [units]
    additionalProperties: false
  capabilities:
    - {name: webnotes.use, description: Read notes, default: everyone}
actions:
  - name: webnotes.count
    description: Count the notes.
    safety: read_only
    capability: webnotes.use
    args: {type: object, properties: {}, additionalProperties: false}
  - name: webnotes.wipe
    description: Wipe every note.
    safety: destructive
    capability: webnotes.use
    args: {type: object, properties: {}, additionalProperties: false}
"""


PLAIN = {  # for the documentation's screenshots
    "Notes <script>alert('desc')</script> for the dashboard tests.": "Notes for the team.",
    "Keeps <img src=x onerror=alert('data')> nothing about members.": (
        "Keeps the notes' text and who wrote them."
    ),
}


class WebNotes:
    def __init__(self, folder: Path, *, hostile: bool = True) -> None:
        self.path = folder / "webnotes.yaml"
        text = MANIFEST
        if not hostile:
            for evil, plain in PLAIN.items():
                text = text.replace(evil, plain)
        self.path.write_text(text)

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("webnotes.count", self.count)
        register("webnotes.wipe", self.count)

    @hookimpl
    def register_jobs(self, register: Any) -> None:
        register("webnotes.reindex", self.reindex, retries=0)

    async def count(self, ctx: Any) -> dict[str, Any]:
        return {"count": 0}

    async def reindex(self, ctx: Any, guild_id: str, total: int, note: str = "") -> None:
        """A job that reports progress (note is untrusted text the Jobs page must escape)."""
        if total < 0:
            raise ValueError("a secret-looking message the page must never show")
        await ctx.progress(total // 2, total, note or None)
