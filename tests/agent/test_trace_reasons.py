"""A refused call's trace reason holds no text the model chose (issue 28, item 8).

The model picks tool names and object keys freely; the trace keeps the schema's own words
(declared property names), array indexes, and for an unknown tool a short hash and length.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from gigi_core import Actor, UnknownAction, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.store.agent_tables import AgentRunStep
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say

MANIFEST = """\
manifest_version: 1
plugin:
  name: kv
  version: 0.0.1
  description: Labels.
  data_statement: Stores nothing.
  capabilities:
    - {name: kv.use, description: Use it, default: everyone}
actions:
  - name: kv.set
    description: Set labels
    safety: read_only
    capability: kv.use
    args:
      type: object
      properties:
        labels: {type: object, additionalProperties: {type: string, maxLength: 5}}
        rows:
          type: array
          items: {type: object, properties: {name: {type: string}}, required: [name]}
        ref: {$ref: "#/$defs/r"}
      required: [labels]
      $defs:
        r: {type: object, properties: {inner: {type: integer}}}
"""
SECRET = "hunter2"
USER = Actor(id="u1")


class Labels:
    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "kv.yaml"
        self.path.write_text(MANIFEST)

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        async def set_labels(ctx: Any, **args: Any) -> dict[str, Any]:
            return {"ok": True}

        register("kv.set", set_labels)


def ask() -> Request:
    return Request(actor=USER, guild_id="g1", channel_id="c1", kind="mention", text="label it")


@pytest.fixture
async def kernel(database_url: str | None, tmp_path: Path) -> Any:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kv", Labels(tmp_path))], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "kv")
        yield kernel


async def reasons(kernel: Any) -> list[str]:
    async with kernel.db.session() as s:
        return [r for r in await s.scalars(select(AgentRunStep.reason)) if r]


async def refused_reason(kernel: Any, args: Any) -> str:
    model = ScriptedModel([call(("kv__set", args)), say("done")])
    reply = await AgentRuntime(kernel, model=model).handle(ask())
    trace = await AgentRuntime(kernel, model=ScriptedModel([])).trace(reply.run_id)
    [reason] = [s["reason"] for s in trace["steps"] if s["reason"]]
    assert SECRET not in json.dumps(trace) and SECRET not in json.dumps(reply.refused)
    return str(reason)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"labels": {f"{SECRET}-key": 5}}, "schema_invalid: labels.?"),
        (
            {"labels": {f"{SECRET}.a.b": "too long"}},
            "schema_invalid: labels.?",
        ),  # a dotted key is one ?
        ({"labels": {}, "rows": [{"name": "a"}, {"name": 1}]}, "schema_invalid: rows.1.name"),
        ({"labels": {}, "ref": {"inner": "x"}}, "schema_invalid: ref.inner"),
        ({"rows": []}, "schema_invalid: labels"),  # a missing required name the schema declares
        ({"labels": 3}, "schema_invalid: labels"),
    ],
)
async def test_schema_invalid_keeps_declared_names_and_indexes_only(kernel, args, expected) -> None:
    assert await refused_reason(kernel, args) == expected


def hashed(name: str) -> str:
    return (
        f"unknown_tool: sha256:{hashlib.sha256(name.encode()).hexdigest()[:8]} ({len(name)} chars)"
    )


async def test_an_unknown_tool_name_is_kept_as_a_hash_and_length(kernel) -> None:
    name = f"{SECRET}_please_run"
    model = ScriptedModel([call((name, {})), say("done")])
    reply = await AgentRuntime(kernel, model=model).handle(ask())
    trace = await AgentRuntime(kernel, model=ScriptedModel([])).trace(reply.run_id)
    [reason] = [s["reason"] for s in trace["steps"] if s["reason"]]
    assert reason == hashed(name)
    assert SECRET not in json.dumps(trace)


async def test_a_direct_call_of_an_unknown_action_is_hashed_too(kernel) -> None:
    name = f"kv.{SECRET}"
    with pytest.raises(UnknownAction):
        await kernel.agent.direct(ask(), name, {})
    assert await reasons(kernel) == [hashed(name)]
