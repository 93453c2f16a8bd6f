"""An in-process test plugin with one action per path through the tool-call pipeline."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from gigi_core import hookimpl

MANIFEST = """\
manifest_version: 1
plugin:
  name: box
  version: 0.0.1
  description: Test actions.
  data_statement: Stores nothing.
  config_schema:
    type: object
    properties:
      greeting: {type: string}
      api_token: {type: string, x-gigi-secret: true}
    additionalProperties: false
  capabilities:
    - {name: box.use, description: Use the box, default: everyone}
    - {name: box.admin, description: Admin actions}
actions:
  - {name: box.echo, description: Echo, safety: read_only, capability: box.use, confirm: never,
     args: {type: object, properties: {text: {type: string, maxLength: 50}, n: {type: integer, default: 1}},
            required: [text], additionalProperties: false}}
  - {name: box.thread, description: Sync handler, safety: read_only, capability: box.use,
     args: {type: object}}
  - {name: box.config, description: Show config, safety: read_only, capability: box.use,
     args: {type: object}}
  - {name: box.secret_op, description: Admin only, safety: read_only, capability: box.admin,
     args: {type: object}}
  - {name: box.write, description: A write, safety: write, capability: box.use, args: {type: object}}
  - {name: box.wipe, description: Destructive, safety: destructive, capability: box.use, confirm: never,
     args: {type: object}}
  - {name: box.fetch, description: External, safety: external, capability: box.use, confirm: never,
     args: {type: object}}
  - {name: box.crash, description: Raises, safety: read_only, capability: box.use, args: {type: object}}
  - {name: box.hang, description: Hangs, safety: read_only, capability: box.use, timeout_seconds: 0.2,
     args: {type: object}}
  - {name: box.notjson, description: Bad result, safety: read_only, capability: box.use, args: {type: object}}
  - {name: box.badresult, description: Violates result schema, safety: read_only, capability: box.use,
     args: {type: object}, result: {type: object, required: [ok]}}
"""


class Toolbox:
    """Records what ran so tests can prove a call did or did not execute."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "box.yaml"
        self.path.write_text(MANIFEST)
        self.ran: list[str] = []
        self.threads: list[str] = []

    @hookimpl
    def register_manifests(self, register):
        register(self.path)

    @hookimpl
    def register_tools(self, register):
        register("box.echo", self.echo)
        register("box.thread", self.thread)
        register("box.config", self.config)
        register("box.secret_op", self.simple("box.secret_op"))
        register("box.write", self.simple("box.write"))
        register("box.wipe", self.simple("box.wipe"))
        register("box.fetch", self.simple("box.fetch"))
        register("box.crash", self.crash)
        register("box.hang", self.hang)
        register("box.notjson", lambda ctx: {"when": object()})
        register("box.badresult", lambda ctx: {"nope": 1})

    async def echo(self, ctx, text: str, n: int = 1):
        self.ran.append("box.echo")
        return {
            "text": text * n,
            "actor": ctx.actor.id,
            "guild": ctx.guild_id,
            "channel": ctx.channel_id,
        }

    def thread(self, ctx):
        self.threads.append(threading.current_thread().name)
        time.sleep(0.01)
        return {"main": threading.current_thread() is threading.main_thread()}

    def config(self, ctx):
        return dict(ctx.config)

    def simple(self, name: str):
        async def handler(ctx):
            self.ran.append(name)
            return {"done": name}

        return handler

    async def crash(self, ctx):
        raise RuntimeError("secret internal detail")

    async def hang(self, ctx):
        await asyncio.sleep(30)
