"""Fenced runs between two kernels on one database (two processes, as far as the store can
tell: each kernel is its own owner): leases held and released, takeovers only of expired
leases, a stale holder stopped at its next write with nothing written, confirmations
resumed wherever they are pressed, exactly once; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select, update

from gigi_core.agent.confirmations import ConfirmationError, ConfirmationStore
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.errors import ConfigError
from gigi_core.store.agent_tables import AgentRun, AgentRunConfirmation, AgentRunStep
from gigi_core.store.leases import db_epoch
from gigi_core.store.tables import AuditEvent
from gigi_core.testing import open_test_kernel
from tests.agent.fenced import SECRET_KEY, USER, Adaptive, Fx, ask


@pytest.fixture
async def pair(database_url, tmp_path):
    """Kernels A and B on one database with one run-state key; fx enabled in g1."""
    ledger = tmp_path / "ledger"
    kits = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        kits.append((folder, Fx(folder, ledger)))
    async with (
        open_test_kernel(
            kits[0][0],
            plugins=[],
            extra_plugins=[("fx", kits[0][1])],
            database_url=database_url,
            secret_key=SECRET_KEY,
        ) as a,
        open_test_kernel(
            kits[1][0],
            plugins=[],
            extra_plugins=[("fx", kits[1][1])],
            database_url=database_url,
            secret_key=SECRET_KEY,
        ) as b,
    ):
        await a.enable_plugin("g1", "fx")
        yield (a, kits[0][1]), (b, kits[1][1])


class Gate:
    """Holds the first fx.look it sees until released; later looks pass."""

    def __init__(self) -> None:
        self.reached, self.released, self.seen = asyncio.Event(), asyncio.Event(), 0

    async def __call__(self, ctx) -> None:
        self.seen += 1
        if self.seen == 1:
            self.reached.set()
            await self.released.wait()


async def row(kernel, run_id: str) -> AgentRun:
    async with kernel.db.session() as s:
        found = await s.get(AgentRun, run_id)
        assert found is not None
        return found


async def written(kernel, run_id: str) -> tuple[int, int]:
    """Step and audit rows of a run, as the database has them."""
    async with kernel.db.session() as s:
        steps = await s.scalar(select(func.count()).where(AgentRunStep.run_id == run_id))
        audits = await s.scalar(select(func.count()).where(AuditEvent.run_id == run_id))
    return int(steps or 0), int(audits or 0)


async def expire(kernel, run_id: str) -> None:
    """What time does to the lease of a process that stopped beating."""
    async with kernel.db.session() as s:
        await s.execute(update(AgentRun).where(AgentRun.id == run_id).values(lease_until=0.0))


async def live_run(runtime: AgentRuntime, gate: Gate) -> tuple[asyncio.Task, str]:
    task = asyncio.create_task(runtime.handle(ask()))
    await asyncio.wait_for(gate.reached.wait(), 10)
    await runtime.kernel.db.writer.drain()
    return task, next(iter(runtime.live))


@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_a_run_holds_its_lease_while_it_goes_on_and_releases_it_at_the_end(
    pair, durability
) -> None:
    (a, fx), _ = pair
    gate = Gate()
    fx.gate = gate
    runtime = AgentRuntime(a, model=Adaptive(), durability=durability)
    task, run_id = await live_run(runtime, gate)
    held = await row(a, run_id)
    async with a.db.session() as s:
        now = await s.scalar(select(db_epoch()))
    assert held.owner == runtime.leases.owner and held.status == "running"
    assert now < held.lease_until <= now + runtime.leases.lease_seconds + 1
    gate.released.set()
    reply = await task
    assert (reply.status, reply.text) == ("done", "Charged.")
    ended = await row(a, run_id)
    assert (ended.status, ended.owner, ended.lease_until) == ("done", held.owner, None)


@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_recover_on_another_process_waits_for_the_lease_then_takes_over(
    pair, durability
) -> None:
    """B cannot take a run A holds; once A's lease expired (A froze), B takes it. A, thawed
    while B is still in the run, stops at its next write (the in-flight marker of the call
    with effects) and writes nothing; B runs that call once and ends the run."""
    (a, fx_a), (b, fx_b) = pair
    gate_a, gate_b = Gate(), Gate()
    fx_a.gate, fx_b.gate = gate_a, gate_b
    on_a = AgentRuntime(a, model=Adaptive(), durability=durability)
    task, run_id = await live_run(on_a, gate_a)
    on_b = AgentRuntime(b, model=Adaptive(), durability=durability)
    with pytest.raises(ConfirmationError, match="held by another Gigi process"):
        await on_b.recover(run_id, USER)

    await expire(a, run_id)
    recovering = asyncio.create_task(on_b.recover(run_id, USER))
    await asyncio.wait_for(gate_b.reached.wait(), 10)  # B is inside the run now
    await b.db.writer.drain()
    taken = await row(b, run_id)
    assert (taken.status, taken.owner) == ("running", on_b.leases.owner)
    before = await written(b, run_id)

    gate_a.released.set()  # A goes on from inside fx.look, as if nothing had happened
    stale = await task
    assert (stale.status, stale.termination_reason) == ("moved", "lease_lost")
    assert fx_a.calls("charge") == []  # A never ran it
    await a.db.writer.drain()
    assert await written(b, run_id) == before  # not one step or audit row from A
    assert (await row(b, run_id)).owner == on_b.leases.owner

    gate_b.released.set()
    recovered = await recovering
    assert (recovered.status, recovered.text) == ("done", "Charged.")
    assert len(fx_a.calls("charge")) == 1  # the ledger is shared: once, by B
    assert (await row(b, run_id)).status == "done"


async def test_a_held_lease_is_kept_fresh_by_the_heartbeat(
    database_url, tmp_path, monkeypatch
) -> None:
    """A long call keeps its run's lease: the heartbeat renews it past its length."""
    monkeypatch.setenv("GIGI_RUN_LEASE_SECONDS", "0.3")
    ledger = tmp_path / "ledger"
    fx = Fx(tmp_path, ledger)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("fx", fx)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "fx")
        gate = Gate()
        fx.gate = gate
        runtime = AgentRuntime(kernel, model=Adaptive())
        assert runtime.leases.lease_seconds == 0.3
        task, run_id = await live_run(runtime, gate)
        first = (await row(kernel, run_id)).lease_until
        await asyncio.sleep(0.9)  # three lease lengths
        await kernel.db.writer.drain()
        async with kernel.db.session() as s:
            now = await s.scalar(select(db_epoch()))
        renewed = (await row(kernel, run_id)).lease_until
        assert renewed > first and renewed > now
        with pytest.raises(ConfirmationError, match="still running here"):
            await runtime.recover(run_id, USER)
        gate.released.set()
        assert (await task).status == "done"


def test_a_bad_lease_setting_names_the_variable(monkeypatch, tmp_path) -> None:
    from gigi_core.store.leases import lease_seconds

    for bad in ("soon", "0", "-2", "inf"):
        monkeypatch.setenv("GIGI_RUN_LEASE_SECONDS", bad)
        with pytest.raises(ConfigError, match="GIGI_RUN_LEASE_SECONDS"):
            lease_seconds("GIGI_RUN_LEASE_SECONDS", 30)
    monkeypatch.delenv("GIGI_RUN_LEASE_SECONDS")
    assert lease_seconds("GIGI_RUN_LEASE_SECONDS", 30) == 30


async def paused_run(kernel) -> str:
    reply = await AgentRuntime(kernel, model=Adaptive("fx__pay")).handle(ask("pay"))
    assert reply.status == "awaiting_confirmation"
    run = await row(kernel, reply.run_id)
    assert run.lease_until is None  # nobody holds a run that waits for a person
    return reply.run_id


async def test_a_confirmation_pressed_on_another_process_runs_the_call_there_once(pair) -> None:
    (a, fx), (b, _) = pair
    run_id = await paused_run(a)
    on_b = AgentRuntime(b, model=Adaptive("fx__pay"))
    reply = await on_b.confirm(run_id, USER)
    assert (reply.status, reply.text) == ("done", "Charged.")
    assert len(fx.calls("pay")) == 1
    assert (await row(a, run_id)).owner == on_b.leases.owner
    with pytest.raises(ConfirmationError):
        await AgentRuntime(a, model=Adaptive("fx__pay")).confirm(run_id, USER)
    assert len(fx.calls("pay")) == 1


async def test_two_processes_pressing_at_once_run_the_call_once(pair) -> None:
    (a, fx), (b, _) = pair
    run_id = await paused_run(a)
    presses = await asyncio.gather(
        AgentRuntime(a, model=Adaptive("fx__pay")).confirm(run_id, USER),
        AgentRuntime(b, model=Adaptive("fx__pay")).confirm(run_id, USER),
        return_exceptions=True,
    )
    done = [p for p in presses if not isinstance(p, BaseException)]
    refused = [p for p in presses if isinstance(p, ConfirmationError)]
    assert len(done) == 1 and len(refused) == 1 and done[0].status == "done"
    assert len(fx.calls("pay")) == 1


async def test_a_process_dying_after_the_approval_leaves_it_to_recovery(pair, monkeypatch) -> None:
    """B approved and took the run, then died before the call was marked in flight: the
    approval is carried out once by whichever process recovers the run."""
    (a, fx), (b, _) = pair
    run_id = await paused_run(a)
    move = ConfirmationStore.move

    async def dies(self, confirmation_id, from_state, to_state, **fence):
        done = await move(self, confirmation_id, from_state, to_state, **fence)
        if to_state == "executing":
            raise SystemExit("process B died")
        return done

    monkeypatch.setattr(ConfirmationStore, "move", dies)
    with pytest.raises(SystemExit):
        await AgentRuntime(b, model=Adaptive("fx__pay")).confirm(run_id, USER)
    monkeypatch.undo()
    assert fx.calls("pay") == []
    on_a = AgentRuntime(a, model=Adaptive("fx__pay"))
    with pytest.raises(ConfirmationError, match="held by another"):
        await on_a.recover(run_id, USER)
    await expire(a, run_id)
    reply = await on_a.recover(run_id, USER)
    assert (reply.status, reply.text) == ("done", "Charged.")
    assert len(fx.calls("pay")) == 1
    async with a.db.session() as s:
        states = list(
            await s.scalars(
                select(AgentRunConfirmation.state).where(AgentRunConfirmation.run_id == run_id)
            )
        )
    assert states == ["done"]


@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_two_recoveries_at_once_in_one_process_run_the_call_once(
    database_url, tmp_path, durability
) -> None:
    """A run left half-done here (its task cancelled inside fx.look, fx.charge still to run)
    recovered twice at once on the same kernel: one recovery runs it, the other is refused,
    and the call with effects runs once."""
    fx = Fx(tmp_path, tmp_path / "ledger")
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("fx", fx)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "fx")
        gate = Gate()
        fx.gate = gate
        runtime = AgentRuntime(kernel, model=Adaptive(), durability=durability)
        task, run_id = await live_run(runtime, gate)
        task.cancel()  # the surface gave up: the run stays running, charge still pending
        with pytest.raises(asyncio.CancelledError):
            await task
        await kernel.db.writer.drain()
        assert (await row(kernel, run_id)).status == "running" and run_id not in runtime.live

        other = AgentRuntime(kernel, model=Adaptive(), durability=durability)  # another surface
        outcomes = await asyncio.gather(
            runtime.recover(run_id, USER), other.recover(run_id, USER), return_exceptions=True
        )
        done = [o for o in outcomes if not isinstance(o, BaseException)]
        refused = [o for o in outcomes if isinstance(o, ConfirmationError)]
        assert len(done) == 1 and len(refused) == 1, outcomes
        assert (done[0].status, done[0].text) == ("done", "Charged.")
        assert len(fx.calls("charge")) == 1
        assert (await row(kernel, run_id)).status == "done"
