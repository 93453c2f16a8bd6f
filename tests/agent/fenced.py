"""A plugin and a model for fenced-run tests, in this process or in a real child process.

``Fx`` has ``fx.look`` (read-only; waits at ``gate`` when a test sets one, or, in a child
process started with ``FX_HOLD``, until a release file appears), ``fx.charge`` (a write that
never asks: the call with effects) and ``fx.pay`` (a write that needs a confirmation).
Every call is appended to a ledger file, so a test counts calls across processes.

``python -m tests.agent.fenced DATABASE_URL HOME LEDGER [confirm]`` runs one request in a
child process (the "process A" of the tests) and prints its reply as JSON.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from gigi_core import hookimpl
from gigi_core.agent import Request
from gigi_core.llm.types import ChatRequest, ChatResponse
from gigi_core.policy.actor import Actor
from gigi_core.testing.scripted import call, say

MANIFEST = """\
manifest_version: 1
plugin:
  name: fx
  version: 0.0.1
  description: Fenced-run test actions.
  data_statement: Stores nothing.
  capabilities:
    - {name: fx.use, description: Use it, default: everyone}
actions:
  - {name: fx.look, description: Look, safety: read_only, capability: fx.use, args: {type: object}}
  - {name: fx.charge, description: Charge, safety: write, capability: fx.use, confirm: never,
     args: {type: object}}
  - {name: fx.pay, description: Pay, safety: write, capability: fx.use, args: {type: object}}
"""
USER = Actor(id="u1")
# Shared by every process of a test: run state sealed by one is opened by another.
SECRET_KEY = base64.urlsafe_b64encode(b"fenced runs: one key for all 32b").decode().rstrip("=")


class Fx:
    def __init__(self, folder: Path, ledger: Path) -> None:
        self.path = folder / "fx.yaml"
        self.path.write_text(MANIFEST)
        self.ledger = ledger
        self.gate: Any = None  # an async callable fx.look awaits (in-process tests)

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("fx.look", self.look)
        register("fx.charge", self._writer("charge"))
        register("fx.pay", self._writer("pay"))

    def note(self, what: str) -> None:
        with self.ledger.open("a") as f:
            f.write(f"{what} {os.getpid()}\n")

    async def look(self, ctx: Any) -> dict[str, Any]:
        self.note("look")
        if self.gate is not None:
            await self.gate(ctx)
        hold = os.environ.get("FX_HOLD")
        if hold:  # a child process waits to be released (or killed)
            await asyncio.to_thread(_wait_for, Path(hold))
        return {"looked": True}

    def _writer(self, name: str) -> Any:
        async def handler(ctx: Any) -> dict[str, Any]:
            self.note(name)
            return {"done": name}

        return handler

    def calls(self, name: str) -> list[str]:
        """The pids that ran ``name``, in order."""
        if not self.ledger.exists():
            return []
        return [
            line.split()[1]
            for line in self.ledger.read_text().splitlines()
            if line.split()[0] == name
        ]


class Adaptive:
    """Proposes look + charge until a tool result is in the conversation, then answers.

    Any process can continue a run with it, from whatever the run's stored state holds.
    """

    def __init__(self, *calls: str) -> None:
        self.calls = calls or ("fx__look", "fx__charge")
        self.requests = 0

    async def __call__(
        self, request: ChatRequest, origin: Any = None, run_id: Any = None
    ) -> ChatResponse:
        self.requests += 1
        await asyncio.sleep(0)  # a real provider waits
        if any(m.role == "tool" for m in request.messages):
            return say("Charged.")
        return call(*((name, {}) for name in self.calls))


def _wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.02)


def ask(text: str = "charge it") -> Request:
    return Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text=text)


async def _child(database_url: str, home: str, ledger: str, mode: str) -> None:
    from gigi_core.agent.runtime import AgentRuntime
    from gigi_core.testing import open_test_kernel

    folder = Path(home)
    fx = Fx(folder, Path(ledger))
    async with open_test_kernel(
        folder,
        plugins=[],
        extra_plugins=[("fx", fx)],
        database_url=database_url,
        secret_key=SECRET_KEY,
    ) as kernel:
        await kernel.enable_plugin("g1", "fx")
        calls = ("fx__pay",) if mode == "confirm" else ("fx__look", "fx__charge")
        runtime = AgentRuntime(kernel, model=Adaptive(*calls))
        reply = await runtime.handle(ask())
        print(
            json.dumps(
                {
                    "run_id": reply.run_id,
                    "status": reply.status,
                    "reason": reply.termination_reason,
                    "owner": runtime.leases.owner,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    Path(sys.argv[2]).mkdir(parents=True, exist_ok=True)
    asyncio.run(_child(*sys.argv[1:4], sys.argv[4] if len(sys.argv) > 4 else "run"))
