"""A confirmation prompt shows the validated arguments being approved, rendered safely."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.render import confirmation_arguments, reply_chunks
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say

MANIFEST = """\
manifest_version: 1
plugin:
  name: wx
  version: 0.0.1
  description: Weather alerts.
  data_statement: Stores nothing.
  capabilities:
    - {name: wx.use, description: Use it, default: everyone}
actions:
  - name: wx.alert
    description: Send a weather alert
    safety: write
    capability: wx.use
    args:
      type: object
      properties:
        city: {type: string, maxLength: 2000}
        token: {type: string, x-gigi-secret: true}
        auth: {$ref: "#/$defs/auth"}
      additionalProperties: false
      $defs:
        auth:
          type: object
          properties: {password: {type: string, x-gigi-secret: true}, user: {type: string}}
  - name: wx.purge
    description: Purge stored alerts
    safety: destructive
    capability: wx.use
    args:
      type: object
      properties: {channel: {type: string}, everything: {type: boolean}}
      additionalProperties: false
"""


class Weather:
    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "wx.yaml"
        self.path.write_text(MANIFEST)
        self.ran: list[dict[str, Any]] = []

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        async def alert(ctx: Any, **args: Any) -> dict[str, Any]:
            self.ran.append(args)
            return {"sent": True}

        register("wx.alert", alert)
        register("wx.purge", alert)


ASKER = Actor(id="u1")


def request(text: str = "") -> Request:
    return Request(actor=ASKER, guild_id="g1", channel_id="c1", kind="slash", text=text)


@pytest.fixture
async def wx(database_url: str | None, tmp_path: Path) -> Any:
    plugin = Weather(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("wx", plugin)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "wx")
        yield kernel, plugin


async def test_direct_prompt_shows_the_arguments_and_masks_secrets(wx) -> None:
    kernel, plugin = wx
    args = {"city": "Paris", "token": "tok-SECRET-1", "auth": {"user": "ann", "password": "pw-9"}}
    reply = await kernel.agent.direct(request(), "wx.alert", args)
    [prompt] = reply.components
    assert 'city: "Paris"' in prompt.arguments
    assert "token: •••• (secret)" in prompt.arguments
    assert '"user": "ann"' in prompt.arguments and '"password": "•••• (secret)"' in prompt.arguments
    shown = "\n".join(reply_chunks(reply))  # what the console and `gigi ask` print
    assert 'city: "Paris"' in shown
    assert "tok-SECRET-1" not in shown and "pw-9" not in shown
    assert plugin.ran == []


async def test_purge_of_one_channel_and_of_everything_read_differently(wx) -> None:
    kernel, _ = wx
    one = await kernel.agent.direct(request(), "wx.purge", {"channel": "123"})
    every = await kernel.agent.direct(request(), "wx.purge", {"everything": True})
    assert one.components[0].arguments == 'channel: "123"'
    assert every.components[0].arguments == "everything: true"
    assert "\n".join(reply_chunks(one)) != "\n".join(reply_chunks(every)).replace(
        every.run_id or "", one.run_id or ""
    )


async def test_model_proposed_call_shows_its_arguments_capped_and_escaped(wx) -> None:
    kernel, _ = wx
    city = "Paris\u202e\x1b[2J" + "x" * 1500
    model = ScriptedModel([call(("wx.alert", {"city": city})), say("sent")])
    runtime = AgentRuntime(kernel, model=model)
    reply = await runtime.handle(request("alert paris"))
    [prompt] = reply.components
    line = prompt.arguments
    assert line.startswith('city: "Paris\\u202e\\u001b[2J') and line.endswith("…")
    assert len(line) <= 220
    assert "\u202e" not in line and "\x1b" not in line


def test_the_block_is_capped_with_what_was_left_out() -> None:
    schema = {"type": "object"}
    args = {f"k{i}": "v" * 150 for i in range(20)}
    text = confirmation_arguments(schema, args)
    assert len(text) <= 900 + 40
    assert text.splitlines()[-1].startswith("… (") and "more not shown" in text


def test_secrets_under_combinators_and_patterns_are_masked() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^key_": {"x-gigi-secret": True}},
        "properties": {"a": {"anyOf": [{"type": "string", "x-gigi-secret": True}, {}]}},
        "additionalProperties": {"type": "array", "items": {"x-gigi-secret": True}},
    }
    text = confirmation_arguments(schema, {"key_1": "s1", "a": "s2", "list": ["s3"], "b": 1})
    assert "s1" not in text and "s2" not in text and "s3" not in text
    assert "•••• (secret)" in text
