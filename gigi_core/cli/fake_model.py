"""What ``gigi dev fake-provider`` answers: scripted turns per kind of call, then defaults.

Two kinds of call reach one fake model and must not share a script. The agent's calls
(tools offered, or plain text) take the chat turns (``--call``, ``--reply``); a
schema-bound call without tools (routing, classify, query analysis, extraction) takes the
structured turns (``--structured``), and without one gets the smallest answer its schema
accepts. Before, a ``routing`` profile's call swallowed the scripted tool call meant for
the agent.
"""

from __future__ import annotations

import json
from typing import Any

MODEL = "fake-model"
KINDS = ("chat", "structured")
MAX_DEPTH = 32  # nesting of a schema the default answer follows; deeper parts are empty


class FakeModel:
    """Answers chat requests from a queue per kind of call, then echoes or fills a schema."""

    def __init__(self, turns: list[dict[str, Any]], echo: Any = None) -> None:
        self.queues: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
        for turn in turns:
            self.queues[turn.get("purpose", "chat")].append(turn)
        self.echo = echo  # called with a line per request (the CLI prints them)
        self.answered = 0

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The chat turns still queued (the agent's)."""
        return self.queues["chat"]

    def __call__(self, request: Any) -> Any:
        from gigi_core.testing.fake_providers import Reply, chat_completion

        if request.route != "chat" or not isinstance(request.json, dict):
            return None  # embeddings get deterministic vectors; anything else an error
        self.answered += 1
        body_in = request.json
        messages = body_in.get("messages") or []
        offered = len(body_in.get("tools") or [])
        model = str(body_in.get("model") or MODEL)
        schema = _schema_of(body_in)
        kind = "structured" if schema is not None and not offered else "chat"
        queue = self.queues[kind]
        if queue:
            body, said = _scripted(queue.pop(0), model)
        elif kind == "structured":
            body = chat_completion(text=json.dumps(smallest(schema)), model=model)
            said = "schema default"
        else:
            body = chat_completion(text=echo_text(messages), model=model)
            said = "echo"
        if self.echo is not None:
            self.echo(
                f"request {self.answered} ({kind}): {len(messages)} messages, "
                f"{offered} tools offered -> {said}"
            )
        return Reply(200, body, route="chat")


def _scripted(turn: dict[str, Any], model: str) -> tuple[dict[str, Any], str]:
    from gigi_core.testing.fake_providers import FakeToolCall, chat_completion

    calls = [FakeToolCall(_wire(c["name"]), c["args"]) for c in turn.get("tool_calls", [])]
    body = chat_completion(
        text=turn.get("text"),
        tool_calls=calls,
        finish_reason="tool_calls" if calls else "stop",
        model=model,
    )
    return body, ", ".join(c.name for c in calls) if calls else "scripted text"


def _schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema a structured-output request asks for, or None."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else {}


def smallest(schema: Any, depth: int = 0) -> Any:
    """The smallest value ``schema`` accepts, deterministically: required properties only,
    minimum lengths and bounds, the first enum value; a boolean is true (a routing yes/no
    then goes on to answer, which is what someone trying Gigi wants to see)."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return smallest(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        return {k: smallest(props.get(k, {}), depth + 1) for k in required}
    if kind == "array":
        count = int(schema.get("minItems") or 0)
        return [smallest(schema.get("items", {}), depth + 1) for _ in range(count)]
    if kind == "string":
        return "x" * int(schema.get("minLength") or 0)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        if low is None:
            return 0
        value = low + 1 if "minimum" not in schema else low
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return True
    return None


def _wire(name: str) -> str:
    """Action names may be given dotted (``dice.roll``): the model speaks wire names."""
    from gigi_core.testing import wire_name

    return wire_name(name) if "." in name else name


def echo_text(messages: list[Any]) -> str:
    """What the echo model says: the last message back, as plain text."""
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = str(content or "").strip()
    if isinstance(last, dict) and last.get("role") == "tool":
        return f"The tool answered: {text}"
    return f"You said: {text}" if text else "(fake model: nothing to echo)"
