"""The persona port: a plugin's system text, earlier turns and a structured output that every
model call asks for and the runner validates (docs/agent.md "Personas")."""

from __future__ import annotations

import json

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.contracts import Persona
from gigi_core.agent.state import request_from_json, request_to_json
from gigi_core.llm.types import AssistantMessage, StructuredOutput, UserMessage
from gigi_core.testing.scripted import call, say

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": ["string", "null"]}, "ok": {"type": "boolean"}},
    "required": ["answer", "ok"],
    "additionalProperties": False,
}
OUT = StructuredOutput(schema=SCHEMA, name="envelope", strict=True)


def ambient(text: str, persona: Persona) -> Request:
    return Request(
        actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="ambient", text=text,
        context="none", persona=persona,
    )  # fmt: skip


async def test_persona_system_history_and_output_on_every_call(env) -> None:
    _, _, runtime = env
    history = (UserMessage(content="earlier"), AssistantMessage(content="reply"))
    persona = Persona(system="You are Luma.", history=history, output=OUT)
    rt, model = runtime(
        call(("dice__roll", {"sides": 6})), say(json.dumps({"answer": "hi", "ok": True}))
    )
    reply = await rt.handle(ambient("hello", persona))
    assert reply.status == "done" and reply.output == {"answer": "hi", "ok": True}
    first, follow_up = model.requests
    assert first.messages[0].content == "You are Luma."
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "user"]
    assert first.structured_output == OUT and follow_up.structured_output == OUT  # tool follow-up
    assert reply.tokens_in == 20 and reply.tokens_out == 10


async def test_invalid_output_and_refusal_end_the_run_failed(env) -> None:
    _, _, runtime = env
    persona = Persona(system="p", output=OUT)
    for turn, reason in (
        (say("not json"), "invalid_output"),
        (say(json.dumps({"answer": 3, "ok": True})), "invalid_output"),
        (say(json.dumps({"answer": "x"})), "invalid_output"),
    ):
        rt, _ = runtime(turn)
        reply = await rt.handle(ambient("hello", persona))
        assert (reply.status, reply.termination_reason, reply.output) == ("failed", reason, None)
    from gigi_core.llm.types import ChatResponse

    rt, _ = runtime(ChatResponse(provider="s", refusal="no", finish_reason="refusal"))
    reply = await rt.handle(ambient("hello", persona))
    assert (reply.status, reply.termination_reason) == ("failed", "refusal")


async def test_tool_rounds_force_a_final_call_without_tools(env) -> None:
    _, _, runtime = env
    persona = Persona(system="p", output=OUT, tool_rounds=2, tool_reasoning_effort="none")
    rt, model = runtime(
        call(("dice__roll", {"sides": 6})),
        call(("dice__roll", {"sides": 6})),
        say(json.dumps({"answer": None, "ok": False})),
    )
    reply = await rt.handle(ambient("roll twice", persona))
    assert reply.output == {"answer": None, "ok": False}
    assert [bool(r.tools) for r in model.requests] == [True, True, False]
    assert [r.reasoning_effort for r in model.requests] == ["none", "none", None]
    assert all(r.structured_output == OUT for r in model.requests)


async def test_schema_in_prompt_only_is_still_validated(env) -> None:
    _, _, runtime = env
    persona = Persona(system="p + schema", output=OUT, output_on_wire=False)
    rt, model = runtime(say(json.dumps({"answer": "a", "ok": True})))
    reply = await rt.handle(ambient("hello", persona))
    assert model.requests[0].structured_output is None and reply.output["answer"] == "a"


def test_persona_survives_the_sealed_state() -> None:
    persona = Persona(
        system="s", history=(UserMessage(content="u"),), output=OUT, tool_rounds=4,
        tool_reasoning_effort="low",
    )  # fmt: skip
    back = request_from_json(json.loads(json.dumps(request_to_json(ambient("x", persona)))))
    assert back.persona == persona


async def test_a_plugin_notes_what_it_did_after_the_run_in_the_trace(env) -> None:
    import pytest

    from gigi_core.agent.render import trace_lines
    from gigi_core.agent.runs import RunNotFound

    _, _, runtime = env
    rt, _ = runtime(say(json.dumps({"answer": "hi", "ok": True})))
    reply = await rt.handle(ambient("hello", Persona(system="p", output=OUT)))
    await rt.note(reply.run_id, "no_implementation", tool="ambient.picture")
    await rt.note(reply.run_id, "posted")
    trace = await rt.trace(reply.run_id)
    notes = [(s["kind"], s["tool"], s["status"]) for s in trace["steps"][-2:]]
    assert notes == [("note", "ambient.picture", "no_implementation"), ("note", None, "posted")]
    indexes = [s["index"] for s in trace["steps"]]
    assert indexes == sorted(set(indexes))  # appended after the run's own steps
    assert any("note ambient.picture -> no_implementation" in line for line in trace_lines(trace))
    for status, tool in (("Free text, not a code", None), ("ok", "not an action")):
        with pytest.raises(ValueError):
            await rt.note(reply.run_id, status, tool=tool)
    with pytest.raises(RunNotFound):
        await rt.note("run_missing", "ok")


async def test_a_persona_without_confirmable_tools_is_offered_none(env) -> None:
    """``offer_confirmable=False``: actions whose manifest asks for a confirmation (a write
    without ``confirm: never``, a destructive one) are not offered; the others are."""
    _, _, runtime = env
    answer = say(json.dumps({"answer": None, "ok": True}))
    rt, model = runtime(answer, answer)
    await rt.handle(ambient("hello", Persona(system="p", output=OUT)))
    await rt.handle(ambient("hello", Persona(system="p", output=OUT, offer_confirmable=False)))
    usual, unasked = model.offered(0), model.offered(1)
    assert {"box__write", "box__wipe"} <= set(usual)
    assert "box__write" not in unasked and "box__wipe" not in unasked
    assert "box__echo" in unasked and "dice__roll" in unasked
    assert set(unasked) == {n for n in usual if n not in ("box__write", "box__wipe")}
