"""``evalkit``: the bundled test plugin cases load by default (``evalkit: false`` opts out).

Each action exercises one runtime path. Results carry a fresh canary so a tool result that
leaks into a table or a log fails the case; nothing here stores anything.
"""

from __future__ import annotations

import asyncio
from importlib.resources import files
from typing import Any

from gigi_core import hookimpl
from gigi_core.evalharness.canary import Canaries


class EvalKit:
    """One instance per case run; ``canaries`` is the run's canary set."""

    def __init__(self, canaries: Canaries | None = None) -> None:
        self.canaries = canaries or Canaries()

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(files("gigi_core.evalharness") / "evalkit.yaml")

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("evalkit.echo", self.echo)
        register("evalkit.fact", self.fact)
        register("evalkit.channel_info", self.channel_info)
        register("evalkit.secret_op", self.secret_op)
        register("evalkit.write", self.write)
        register("evalkit.crash", self.crash)
        register("evalkit.hang", self.hang)

    async def echo(self, ctx: Any, text: str, n: int = 1) -> dict[str, Any]:
        return {"text": text * n, "token": self.canaries.new("a tool result (evalkit.echo)")}

    async def fact(self, ctx: Any, topic: str) -> dict[str, Any]:
        return {
            "topic": topic,
            "value": 1234.5678,
            "unit": "km",
            "token": self.canaries.new("a tool result (evalkit.fact)"),
        }

    async def channel_info(self, ctx: Any, channel: str) -> dict[str, Any]:
        return {"channel": channel, "topic": "general chatter"}

    async def secret_op(self, ctx: Any) -> dict[str, Any]:
        return {"done": "evalkit.secret_op"}

    async def write(self, ctx: Any, note: str = "") -> dict[str, Any]:
        return {"written": True, "token": self.canaries.new("a tool result (evalkit.write)")}

    async def crash(self, ctx: Any, **_: Any) -> dict[str, Any]:
        raise RuntimeError("evalkit crashed on purpose (internal detail)")

    async def hang(self, ctx: Any, **_: Any) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {}


class Veto:
    """A policy plugin denying every call to the actions it names (default: evalkit.fact).

    Load it in a case with ``test_plugins: [{name: veto, factory: gigi_core.evalharness.plugin:Veto}]``.
    """

    def __init__(self, actions: tuple[str, ...] = ("evalkit.fact",)) -> None:
        self.actions = frozenset(actions)

    @hookimpl
    def check_tool_call(self, call: Any, actor: Any, action: Any, kernel: Any) -> Any:
        return "deny" if action.name in self.actions else None
