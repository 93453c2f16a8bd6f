"""Test plugins for events and manifest commands, written as a third-party plugin would be.

``Watch`` observes messages (so it asks for the Message Content intent) and declares the
``/watch`` commands: typed options, choices, a write that needs a confirmation, an admin
command and a result delivered as a file. ``DmWatch`` observes direct messages too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gigi_core import hookimpl

WATCH = """\
manifest_version: 1
plugin:
  name: watch
  version: 0.0.1
  description: Watches messages for the tests.
  data_statement: Keeps message ids in memory for the test.
  intents: [message_content]
  capabilities:
    - {name: watch.use, description: Use the watcher, default: everyone}
    - {name: watch.admin, description: Configure the watcher}
actions:
  - name: watch.enable
    command: watch enable
    description: Start watching a channel.
    safety: write
    capability: watch.admin
    confirm: never
    args:
      type: object
      properties:
        channel: {type: string, x-gigi-type: channel, description: The channel to watch}
        retention_days: {type: integer, minimum: 1, maximum: 365, description: Days to keep}
        mode: {type: string, enum: [all, mentions], description: What to keep}
        ratio: {type: number, minimum: 1, maximum: 5}  # 0 or 0.5 trip a kernel YAML bug
        loud: {type: boolean, description: Say so in the channel}
        who: {type: string, x-gigi-type: user}
        team: {type: string, x-gigi-type: role}
        label: {type: string, minLength: 2, maxLength: 20}
      required: [channel]
      additionalProperties: false
  - name: watch.count
    command: watch count
    description: Count what was seen.
    safety: read_only
    capability: watch.use
    visibility: public
    args: {type: object, properties: {}, additionalProperties: false}
  - name: watch.note
    command: watch note add
    description: Add a note (asks first).
    safety: write
    capability: watch.use
    args:
      type: object
      properties: {text: {type: string, maxLength: 100, description: The note}}
      required: [text]
      additionalProperties: false
  - name: watch.dump
    command: watch dump
    description: Everything seen, as a file.
    safety: read_only
    capability: watch.use
    args: {type: object, properties: {}, additionalProperties: false}
"""

DMWATCH = """\
manifest_version: 1
plugin:
  name: dmwatch
  version: 0.0.1
  description: Watches direct messages for the tests.
  data_statement: Nothing.
  dm_events: true
  capabilities:
    - {name: dmwatch.use, description: Ping, default: everyone}
actions:
  - name: dmwatch.ping
    description: Ping.
    safety: read_only
    capability: dmwatch.use
    args: {type: object, properties: {}, additionalProperties: false}
"""


class Watch:
    """Records every event it observes and every call it runs."""

    manifest = WATCH
    name = "watch"

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / f"{self.name}.yaml"
        self.path.write_text(self.manifest)
        self.events: list[Any] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def observe_event(self, event: Any) -> None:
        self.events.append(event)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("watch.enable", self.enable)
        register("watch.count", self.count)
        register("watch.note", self.note)
        register("watch.dump", self.dump)

    async def enable(self, ctx: Any, **args: Any) -> dict[str, Any]:
        self.calls.append(("watch.enable", args))
        return {"message": f"Watching <#{args['channel']}>.", "args": args}

    async def count(self, ctx: Any) -> dict[str, Any]:
        self.calls.append(("watch.count", {}))
        return {"count": len(self.events)}

    async def note(self, ctx: Any, text: str) -> dict[str, Any]:
        self.calls.append(("watch.note", {"text": text}))
        return {"message": f"Noted: {text}"}

    async def dump(self, ctx: Any) -> dict[str, Any]:
        self.calls.append(("watch.dump", {}))
        return {"file": "watch dump", "data": {"events": len(self.events), "who": ctx.actor.id}}


class DmWatch(Watch):
    manifest = DMWATCH
    name = "dmwatch"

    @hookimpl
    def register_tools(self, register: Any) -> None:
        async def ping(ctx: Any) -> dict[str, Any]:
            return {"ok": True}

        register("dmwatch.ping", ping)


WADMIN = """\
manifest_version: 1
plugin:
  name: wadmin
  version: 0.0.1
  description: Admin-only commands for the tests.
  data_statement: Nothing.
  capabilities:
    - {name: wadmin.manage, description: Reset things}
actions:
  - name: wadmin.reset
    command: wadmin
    description: Reset everything (admins).
    safety: read_only
    capability: wadmin.manage
    args:
      type: object
      properties: {level: {type: integer, enum: [1, 2, 3], description: How hard}}
      additionalProperties: false
"""


class WatchAdmin(Watch):
    """A root that is one command, for admins only: Discord hides it from members."""

    manifest = WADMIN
    name = "wadmin"

    @hookimpl
    def register_tools(self, register: Any) -> None:
        async def reset(ctx: Any, level: int = 1) -> dict[str, Any]:
            self.calls.append(("wadmin.reset", {"level": level}))
            return {"message": f"Reset at level {level}."}

        register("wadmin.reset", reset)
