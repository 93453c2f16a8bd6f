"""A channel argument left out means the channel asked in: that channel passes the same
visibility check as a named one, on every path a tool is called by (agent runs and the
direct path of /call, slash commands and ``gigi tools call``)."""

from __future__ import annotations

from typing import Any

import pytest

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.errors import PolicyDenied
from gigi_core.testing import AgentRuntime, open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say

ALICE = Actor(id="alice")
MANIFEST = """\
manifest_version: 1
plugin:
  name: peek
  version: 0.0.1
  description: Reads back a channel.
  data_statement: Stores nothing.
  capabilities:
    - {name: peek.use, description: Peek, default: everyone}
actions:
  - name: peek.recent
    description: Earlier messages of a channel (default - the one asked in).
    safety: read_only
    capability: peek.use
    args:
      type: object
      properties:
        channel: {type: string, x-gigi-type: channel, maxLength: 64}
        limit: {type: integer, minimum: 1, maximum: 5}
      additionalProperties: false
"""


class Peek:
    """Records which channel each executed call read."""

    def __init__(self, tmp_path: Any) -> None:
        self.path = tmp_path / "peek.yaml"
        self.path.write_text(MANIFEST)
        self.read: list[str] = []

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("peek.recent", self.recent)

    async def recent(self, ctx: Any, channel: str | None = None, limit: int = 5) -> dict[str, Any]:
        self.read.append(channel or ctx.channel_id)
        return {"channel": channel or ctx.channel_id}


@pytest.fixture
async def env(database_url, tmp_path):
    peek = Peek(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("peek", peek)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "peek")
        yield kernel, peek


async def _views_only(channel_id: str) -> bool:
    """The actor sees #nohist but may not read its history (Discord: no Read Message History)."""
    return channel_id == "general"


def _request(**fields: Any) -> Request:
    base: dict[str, Any] = {
        "actor": ALICE,
        "guild_id": "g1",
        "channel_id": "nohist",
        "kind": "slash",
        "text": "",
    }
    return Request(**{**base, **fields})


async def test_the_direct_path_checks_the_channel_asked_in(env) -> None:
    kernel, peek = env
    with pytest.raises(PolicyDenied, match="cannot view that channel"):
        await kernel.agent.direct(_request(channel_visible=_views_only), "peek.recent", {})
    with pytest.raises(PolicyDenied, match="cannot view that channel"):
        await kernel.agent.direct(
            _request(channel_visible=_views_only), "peek.recent", {"limit": 2}
        )
    assert peek.read == []
    rows = await kernel.audit.recent("g1", limit=5)
    assert [(r["status"], r["reason_code"]) for r in rows if r["action"] == "peek.recent"] == [
        ("denied", "channel_hidden"),
        ("denied", "channel_hidden"),
    ]
    # Asked where the actor may read back: the omitted channel is that one, and it runs.
    await kernel.agent.direct(
        _request(channel_id="general", channel_visible=_views_only), "peek.recent", {}
    )
    assert peek.read == ["general"]


async def test_a_surface_without_a_check_keeps_to_the_channel_asked_in(env) -> None:
    """`gigi tools call` has no Discord permissions: its own channel, and only that."""
    kernel, peek = env
    await kernel.agent.direct(_request(kind="direct"), "peek.recent", {})
    with pytest.raises(PolicyDenied, match="cannot view that channel"):
        await kernel.agent.direct(_request(kind="direct"), "peek.recent", {"channel": "mods"})
    assert peek.read == ["nohist"]


async def test_the_channel_asked_in_is_always_in_the_answers_audience(env) -> None:
    """The answer is posted there: its readers are the audience, so no audience check."""
    kernel, peek = env

    async def sees_all(channel_id: str) -> bool:
        return True

    async def audience() -> frozenset[str]:
        return frozenset()  # e.g. a private thread whose members are not cached

    public = _request(kind="mention", channel_visible=sees_all, visible_channels=audience)
    await kernel.agent.direct(public, "peek.recent", {})
    with pytest.raises(PolicyDenied, match="not everyone who will see this answer"):
        await kernel.agent.direct(public, "peek.recent", {"channel": "mods"})
    assert peek.read == ["nohist"]


async def test_an_agent_run_checks_the_channel_asked_in(env) -> None:
    kernel, peek = env
    model = ScriptedModel([call(("peek.recent", {})), say("nothing")])
    runtime = AgentRuntime(kernel, model=model)
    reply = await runtime.handle(
        _request(kind="mention", text="what was said?", channel_visible=_views_only)
    )
    assert reply.text == "nothing"
    assert peek.read == []
    assert "cannot view that channel" in str(model.requests[1].messages[-1].content)
