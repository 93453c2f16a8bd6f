"""A persona run's pieces: each model call's shape and the final output's validation.

Kept apart from the runner so the loop reads the same with or without a persona; the
runner calls ``shape`` before every model call and ``validate`` on the final text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    from gigi_core.agent.contracts import Persona
    from gigi_core.llm.types import ChatRequest

_VALIDATORS: dict[str, Any] = {}


@dataclass(frozen=True)
class Checked:
    """The final text as an object, or why it is not one (a failed attempt)."""

    value: Any = None
    problem: str | None = None


def shape(request: ChatRequest, persona: Persona, calls_made: int) -> ChatRequest:
    """The structured output on every call; no tools once ``tool_rounds`` calls used them."""
    update: dict[str, Any] = {}
    if persona.output is not None and persona.output_on_wire:
        update["structured_output"] = persona.output
    if persona.tool_rounds is not None and calls_made >= persona.tool_rounds and request.tools:
        update["tools"], update["tool_choice"] = [], None
    elif request.tools and persona.tool_reasoning_effort is not None:
        update["reasoning_effort"] = persona.tool_reasoning_effort
    return request.model_copy(update=update) if update else request


def validate(persona: Persona, text: str | None) -> Checked:
    """Parse and check the final text against the persona's schema; no repair of any kind."""
    if persona.output is None:
        return Checked(text)
    try:
        value = json.loads(text or "")
    except ValueError as exc:
        return Checked(problem=f"not JSON ({exc.msg})")
    schema = persona.output.schema_
    key = json.dumps(schema, sort_keys=True)
    validator = _VALIDATORS.get(key)
    if validator is None:
        if len(_VALIDATORS) > 256:
            _VALIDATORS.clear()
        validator = _VALIDATORS[key] = jsonschema_rs.Draft202012Validator(schema)
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.instance_path) or "the top level"
        return Checked(problem=f"does not match the {persona.output.name} schema at {where}")
    return Checked(value)


def to_json(persona: Persona | None) -> dict[str, Any] | None:
    """For the sealed run state, so a run resumed after a confirmation keeps its persona."""
    if persona is None:
        return None
    return {
        "system": persona.system,
        "history": [m.model_dump(mode="json") for m in persona.history],
        "output": persona.output.model_dump(mode="json") if persona.output else None,
        "output_on_wire": persona.output_on_wire,
        "tool_rounds": persona.tool_rounds,
        "tool_reasoning_effort": persona.tool_reasoning_effort,
    }


def from_json(data: dict[str, Any] | None) -> Persona | None:
    if not data:
        return None
    from pydantic import TypeAdapter

    from gigi_core.agent.contracts import Persona
    from gigi_core.llm.types import Message, StructuredOutput

    history = TypeAdapter(list[Message]).validate_python(data.get("history") or [])
    output = data.get("output")
    return Persona(
        system=data["system"],
        history=tuple(history),
        output=StructuredOutput.model_validate(output) if output else None,
        output_on_wire=data.get("output_on_wire", True),
        tool_rounds=data.get("tool_rounds"),
        tool_reasoning_effort=data.get("tool_reasoning_effort"),
    )
