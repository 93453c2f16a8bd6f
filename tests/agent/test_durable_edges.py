"""Edges of durable runs: failed background writes, cancelled tasks mid-write, cancels seen
late, writer drain and retries, confirmations cancelled before their call, recover of a live
run, and when a call with effects has its outcome stored; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time

import pytest

from gigi_core.agent import Request
from gigi_core.agent.confirmations import ConfirmationError, ConfirmationStore
from gigi_core.agent.journal import RunJournal
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.errors import ConfigError
from gigi_core.policy.view import ViewCache
from gigi_core.store.db import Database
from gigi_core.store.writer import Writer
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel, call, say
from tests.agent.test_journal import USER, Probe, ask, stored, stored_state
from tests.toolbox import Toolbox


@pytest.fixture
async def kit(database_url, tmp_path):
    """A kernel with the probe and the toolbox enabled in g1."""
    probe, box = Probe(tmp_path), Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("probe", probe), ("box", box)],
        database_url=database_url,
    ) as kernel:
        await kernel.enable_plugin("g1", "probe")
        await kernel.enable_plugin("g1", "box")
        yield kernel, probe, box


def runtime(kernel, *turns, **kwargs) -> tuple[AgentRuntime, ScriptedModel]:
    """A runtime whose scripted model waits once per call, as a real provider does."""
    model = ScriptedModel(list(turns))

    async def provider(*args):
        await asyncio.sleep(0)
        return await model(*args)

    return AgentRuntime(kernel, model=provider, **kwargs), model


def direct() -> Request:
    return Request(actor=USER, guild_id="g1", channel_id="c1", kind="slash", text="")


async def landed(kernel) -> None:
    """Every write queued so far has landed: a write queued after them commits after them."""
    await kernel.db.writer.write(lambda conn: None)


@pytest.mark.parametrize("durability", ["turn", "deferred"])
async def test_a_failed_background_write_stops_the_next_call_with_effects(
    kit, monkeypatch, durability
) -> None:
    """A durable point is never satisfied by an earlier queued write of the run that failed."""
    kernel, probe, _ = kit
    submitted = []
    original = Writer.submit

    def submit(self, fn, **kwargs):
        submitted.append(fn)
        if len(submitted) == 2:  # the first checkpoint a due timer queues after the run's row

            def fn(conn):
                raise RuntimeError("the disk is full")

        return original(self, fn, **kwargs)

    monkeypatch.setattr(Writer, "submit", submit)

    async def let_the_timer_fire(ctx):
        await asyncio.sleep(0.02)

    probe.inside = let_the_timer_fire
    rt, _ = runtime(
        kernel,
        call(("probe__look", {})),
        call(("probe__act", {})),
        say("no"),
        durability=durability,
    )
    rt.flush_seconds = 0.001
    reply = await rt.handle(ask())
    assert len(submitted) >= 2
    assert probe.ran == ["probe.look"]  # the call with effects never started
    assert (reply.status, reply.termination_reason) == ("failed", "internal_error")


@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_a_task_cancelled_during_the_final_write_leaves_the_run_ended(
    kit, monkeypatch, durability
) -> None:
    """Cancelling the run's task while its final write is in progress keeps the run ended."""
    kernel, _, _ = kit
    finishing = asyncio.Event()
    original = RunJournal.finish

    async def finish(self, *args, **kwargs):
        finishing.set()
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(RunJournal, "finish", finish)
    rt, _ = runtime(kernel, call(("probe__look", {})), say("done"), durability=durability)
    task = asyncio.create_task(rt.handle(ask()))
    await finishing.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await landed(kernel)
    run, _, _ = await stored(kernel, (await rt.runs.last(guild_id="g1")).id)
    assert (run.status, run.termination_reason, run.state_sealed) == ("done", "completed", None)


@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_a_task_cancelled_during_the_pause_write_stays_confirmable(
    kit, monkeypatch, durability
) -> None:
    """A task cancelled during the pause write leaves the run confirmable, exactly once."""
    kernel, _, box = kit
    armed, pausing = [], asyncio.Event()
    make, write = ConfirmationStore.row, Writer.write

    def made(self, *args, **kwargs):
        armed.append(True)  # the run's next write is its pause (it inserts this row)
        return make(self, *args, **kwargs)

    async def written(self, fn):
        if armed:
            pausing.set()
        return await write(self, fn)

    monkeypatch.setattr(ConfirmationStore, "row", made)
    monkeypatch.setattr(Writer, "write", written)
    rt = AgentRuntime(kernel, durability=durability)
    task = asyncio.create_task(rt.direct(direct(), "box.write", {}))
    await pausing.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await landed(kernel)
    run_id = (await rt.runs.last(guild_id="g1")).id
    assert (await rt.runs.get(run_id)).status == "awaiting_confirmation"
    assert (await rt.confirm(run_id, USER)).status == "done"
    with pytest.raises(ConfirmationError):
        await rt.confirm(run_id, USER)
    assert box.ran == ["box.write"]


@pytest.mark.parametrize("canceller", ["this runtime", "another runtime"])
@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_a_cancelled_run_has_only_the_cancellers_answer_audit(
    kit, durability, canceller
) -> None:
    """A run cancelled from inside a tool handler gets one agent.answer row (the cancel's)."""
    kernel, probe, _ = kit
    rt, _ = runtime(kernel, call(("probe__look", {})), say("not stored"), durability=durability)
    other = rt if canceller == "this runtime" else AgentRuntime(kernel)  # e.g. another surface

    async def cancel(ctx):
        assert await other.cancel(ctx.run_id, USER)

    probe.inside = cancel
    reply = await rt.handle(ask())
    assert reply.status == "cancelled"
    await kernel.db.writer.drain()
    _, _, audits = await stored(kernel, reply.run_id)
    assert [a[2] for a in audits if a[0] == "agent.answer"] == ["cancelled"]


async def test_drain_returns_under_steady_load(kernel) -> None:
    """drain() waits for the writes queued before it, not for ones that keep arriving."""
    writer, done, stop = kernel.db.writer, [], asyncio.Event()

    async def load():
        while not stop.is_set():
            writer.submit(lambda conn: None)
            await asyncio.sleep(0)

    producer = asyncio.create_task(load())
    try:
        await asyncio.sleep(0.02)
        for _ in range(3):
            writer.submit(lambda conn: True, on_result=done.append)
        await asyncio.wait_for(writer.drain(), 5)
        assert done == [True, True, True]
    finally:
        stop.set()
        await producer


async def test_drain_waits_for_a_write_whose_caller_gave_up(tmp_path) -> None:
    """drain() returns only once a write queued before it landed, even if its caller gave up."""
    db, done = Database(f"sqlite+aiosqlite:///{tmp_path / 'drain.db'}"), []

    def slow(conn):  # on the writer thread
        time.sleep(0.05)
        done.append(True)

    try:
        caller = asyncio.create_task(db.writer.write(slow))
        await asyncio.sleep(0)  # the write is queued
        caller.cancel()
        await db.writer.drain()
        assert done == [True]
    finally:
        await db.close()


async def test_a_single_failing_write_runs_once(kernel) -> None:
    """A write that fails alone is attempted once, and its caller gets the exception."""
    attempts = []

    def broken(conn):
        attempts.append(conn)
        raise ValueError("this write is broken")

    await kernel.db.writer.drain()
    with pytest.raises(ValueError, match="this write is broken"):
        await kernel.db.writer.write(broken)
    assert len(attempts) == 1


@pytest.mark.parametrize(
    ("durability", "canceller"),
    [
        ("turn", "another runtime"),
        ("deferred", "another runtime"),
        ("step", "another runtime"),
        ("turn", "this runtime"),
    ],
)
async def test_a_confirmation_cancelled_before_its_call_ran_ends_failed(
    kit, monkeypatch, durability, canceller
) -> None:
    """A run cancelled after its confirmation was claimed, before the call ran: it ends failed."""
    kernel, _, box = kit
    rt = AgentRuntime(kernel, durability=durability)
    run_id = (await rt.direct(direct(), "box.write", {})).run_id
    cancelling = rt if canceller == "this runtime" else AgentRuntime(kernel)  # another surface
    move = ConfirmationStore.move

    async def moved(self, confirmation_id, from_state, to_state, **fence):
        done = await move(self, confirmation_id, from_state, to_state, **fence)
        if to_state == "executing":  # claimed, and now the run is cancelled
            assert await cancelling.cancel(run_id, USER)
        return done

    monkeypatch.setattr(ConfirmationStore, "move", moved)
    reply = await rt.confirm(run_id, USER)
    assert reply.status == "cancelled" and box.ran == []
    assert (await rt.trace(run_id))["confirmations"][0]["state"] == "failed"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "abc"])
def test_a_bad_policy_cache_setting_is_a_config_error(monkeypatch, value) -> None:
    """GIGI_POLICY_CACHE_SECONDS must be a finite number of seconds, 0 or more."""
    monkeypatch.setenv("GIGI_POLICY_CACHE_SECONDS", value)
    with pytest.raises(ConfigError, match="GIGI_POLICY_CACHE_SECONDS"):
        ViewCache()


async def test_recover_refuses_a_run_executing_here(kit) -> None:
    """recover() of a run this process is executing is refused; its call does not run twice."""
    kernel, probe, _ = kit
    rt, _ = runtime(kernel, call(("probe__look", {})), say("done"), durability="step")
    refused = []

    async def recover(ctx):
        if len(probe.ran) == 1:
            try:
                await rt.recover(ctx.run_id, USER)
            except ConfirmationError as exc:
                refused.append(str(exc))

    probe.inside = recover
    reply = await rt.handle(ask())
    assert len(refused) == 1 and "still running here" in refused[0]
    assert probe.ran == ["probe.look"] and reply.text == "done"


@pytest.mark.parametrize("durability", ["turn", "deferred"])
async def test_a_call_with_effects_has_its_outcome_stored_before_the_run_goes_on(
    kit, durability
) -> None:
    """The outcome of a call with effects is stored before the next model call."""
    kernel, _, _ = kit
    model, seen = ScriptedModel([call(("probe__act", {})), say("done")]), []

    async def provider(request, origin, run_id):
        if model.requests:  # the next model call: what would a crash here leave behind?
            seen.append((await stored_state(kernel, run_id), (await stored(kernel, run_id))[1]))
        return await model(request, origin, run_id)

    rt = AgentRuntime(kernel, model=provider, durability=durability)
    assert (await rt.handle(ask())).status == "done"
    [(state, steps)] = seen
    assert state["in_flight"] is None and state["pending"] == []
    assert (2, "tool", "probe.act", "ok") in steps


async def test_a_failed_background_write_is_not_forgotten_by_later_ones(tmp_path) -> None:
    """A run's failed queued write still fails its next durable point after other writes."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'journal.db'}")
    try:
        journal = RunJournal(
            db.writer,
            None,  # type: ignore[arg-type]
            "run_x",
            durability="turn",
            flush_seconds=60,
            owner="here",
            lease_seconds=30,
        )

        def broken(conn):
            raise ValueError("this write was lost")

        journal._submit(broken)
        journal._submit(lambda conn: True)
        await db.writer.drain()
        journal._submit(lambda conn: True)  # a later write must not drop the failed one
        with pytest.raises(ValueError, match="was lost"):
            await journal.flush()
    finally:
        await db.close()
