"""A call the model proposed but may not make is named in the trace and in the reply.

The trace says which call was refused and why (a reason class, the field path of a schema
error, the capability of a denial), metadata only; the reply says it was not done even
when the model's own text claims success.
"""

from __future__ import annotations

import hashlib
import json

from sqlalchemy import select

from gigi_core import Actor, hookimpl
from gigi_core.agent import Request
from gigi_core.agent.render import trace_lines
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.store.agent_tables import AgentRunStep
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.toolbox import Toolbox

USER = Actor(id="u1")
SECRET_TEXT = "hunter2-do-not-store"


def ask(text: str = "do it", actor: Actor = USER) -> Request:
    return Request(actor=actor, guild_id="g1", channel_id="c1", kind="mention", text=text)


def refused_steps(trace: dict) -> list[dict]:
    return [s for s in trace["steps"] if s["reason"]]


async def test_unknown_tool_is_named_sanitised_and_the_reply_says_it_was_not_done(env) -> None:
    kernel, toolbox, runtime = env
    name = "box__teleport`@everyone\n" + "x" * 200
    rt, _ = runtime(call((name, {"text": SECRET_TEXT})), say("Done! I teleported it."))
    reply = await rt.handle(ask())
    assert reply.text == "Done! I teleported it."  # the model's words, untouched
    [refused] = reply.refused
    assert refused.startswith("box__teleport??everyone?xx") and "no such tool" in refused
    note = reply.full_text().split("\n\n")[-1]
    assert note.startswith("Not done") and "box__teleport" in note
    trace = await rt.trace(reply.run_id)
    [step] = refused_steps(trace)
    assert step["status"] == "invalid" and step["tool"] is None
    # the trace keeps a hash and the length, not the name the model chose (issue 28)
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    assert step["reason"] == f"unknown_tool: sha256:{digest} ({len(name)} chars)"
    assert any(step["reason"] in line for line in trace_lines(trace))
    assert "teleport" not in json.dumps(trace)
    assert SECRET_TEXT not in json.dumps(trace)


async def test_a_real_action_not_offered_to_this_member(env) -> None:
    kernel, toolbox, runtime = env
    rt, model = runtime(call(("box.secret_op", {})), say("I ran the admin operation."))
    reply = await rt.handle(ask())
    assert toolbox.ran == []
    assert "unknown tool" in model.requests[1].messages[-1].content  # the model learns no more
    [step] = refused_steps(await rt.trace(reply.run_id))
    assert (step["tool"], step["reason"]) == ("box.secret_op", "not_offered")
    assert reply.refused == ["box.secret_op (not available to you here)"]


async def test_schema_error_names_the_field_not_the_value(env) -> None:
    kernel, toolbox, runtime = env
    rt, _ = runtime(call(("box__echo", {"text": SECRET_TEXT * 10})), say("Echoed!"))
    reply = await rt.handle(ask())
    trace = await rt.trace(reply.run_id)
    [step] = refused_steps(trace)
    assert (step["tool"], step["reason"]) == ("box.echo", "schema_invalid: text")
    assert reply.refused == ["box.echo (its arguments did not fit, at text)"]
    assert SECRET_TEXT not in json.dumps(trace)


async def test_unparsable_arguments(env) -> None:
    kernel, toolbox, runtime = env
    rt, _ = runtime(call(("box__echo", "{not json")), say("Echoed!"))
    reply = await rt.handle(ask())
    [step] = refused_steps(await rt.trace(reply.run_id))
    assert (step["tool"], step["reason"]) == ("box.echo", "unparsable")


async def test_a_retry_that_succeeds_clears_the_refusal(env) -> None:
    kernel, toolbox, runtime = env
    rt, _ = runtime(
        call(("box__echo", {"text": 5})), call(("box__echo", {"text": "ok"})), say("Echoed.")
    )
    reply = await rt.handle(ask())
    assert toolbox.ran == ["box.echo"] and reply.refused == []
    assert "Not done" not in reply.full_text()
    [step] = refused_steps(await rt.trace(reply.run_id))  # the trace still shows the try
    assert step["reason"] == "schema_invalid: text"


async def test_rejected_confirmation_is_named(env) -> None:
    kernel, toolbox, runtime = env
    rt, _ = runtime(call(("box__write", {})), say("Written!"))
    paused = await rt.handle(ask())
    assert paused.status == "awaiting_confirmation"
    reply = await rt.reject(paused.run_id, USER)
    assert toolbox.ran == [] and reply.text == "Written!"
    assert reply.refused == ["box.write (it was rejected)"]
    steps = refused_steps(await rt.trace(reply.run_id))
    assert [(s["kind"], s["tool"], s["reason"]) for s in steps] == [
        ("confirmation", "box.write", "confirm_rejected")
    ]


async def test_policy_denial_names_the_capability_and_code(tmp_path, database_url) -> None:
    class Veto:
        @hookimpl
        def check_tool_call(self, call, actor, action, kernel):
            return "deny"

    box = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", box), ("veto", Veto())],
        database_url=database_url,
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        model = ScriptedModel([call(("box__echo", {"text": "x"})), say("Echoed it for you.")])
        rt = AgentRuntime(kernel, model=model)
        reply = await rt.handle(ask())
        assert box.ran == []
        [step] = refused_steps(await rt.trace(reply.run_id))
        assert (step["tool"], step["status"], step["reason"]) == (
            "box.echo",
            "denied",
            "policy_denied: plugin_veto box.use",
        )
        assert reply.refused == ["box.echo (not allowed: plugin_veto)"]
        async with kernel.db.session() as s:
            rows = list(await s.scalars(select(AgentRunStep.reason)))
        assert "policy_denied: plugin_veto box.use" in rows
