"""A finished turn is freed by reference counting: it leaves no cycle for the collector.

Every cyclic object a turn leaves behind waits for a generation-1 or -2 pass, which stops
every turn in flight (issue 17: at 10 concurrent turns those passes were the tail)."""

from __future__ import annotations

import gc
import weakref

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.calls import CallHandler
from gigi_core.agent.journal import RunJournal
from gigi_core.agent.runner import Runner
from gigi_core.agent.state import RunState
from gigi_core.testing.scripted import call, say

TURN_TYPES = (Runner, CallHandler, RunJournal, RunState)


def ask(text: str) -> Request:
    return Request(actor=Actor(id="u1"), guild_id="g1", channel_id="c1", kind="mention", text=text)


def cyclic_garbage() -> list[object]:
    """What only the cyclic collector would free now (kept for inspection, then dropped)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = [
            o
            for o in gc.garbage
            if not isinstance(o, weakref.ProxyTypes) and isinstance(o, TURN_TYPES)
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


async def test_finished_turns_leave_no_cycles(env) -> None:
    kernel, _, runtime = env
    rt, _ = runtime(*[step for _ in range(3) for step in turn_script()])
    await rt.handle(ask("warm up"))  # first-use caches are not the turn's garbage
    gc.collect()
    gc.disable()
    try:
        for _ in range(2):
            reply = await rt.handle(ask("roll and echo"))
            assert reply.status == "done" and len(reply.citations) == 2
        await kernel.db.writer.drain()
        assert cyclic_garbage() == []
    finally:
        gc.enable()


async def test_a_refused_call_leaves_no_cycles_either(env) -> None:
    kernel, _, runtime = env
    rt, _ = runtime(
        say("warm"),
        call(("dice__roll", {"sides": "x"})),  # refused: InvalidArguments raised and caught
        say("it failed"),
    )
    await rt.handle(ask("warm up"))
    gc.collect()
    gc.disable()
    try:
        reply = await rt.handle(ask("roll badly"))
        assert reply.status == "done" and reply.text == "it failed"
        await kernel.db.writer.drain()
        assert [type(o).__name__ for o in cyclic_garbage()] == []
    finally:
        gc.enable()


def turn_script() -> list[object]:
    return [
        call(("dice__roll", {"sides": 6, "count": 2}), ("box__echo", {"text": "hi"})),
        say("done"),
    ]
