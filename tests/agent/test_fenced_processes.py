"""Fenced runs across real processes on one embedded PostgreSQL: process A (a child) starts
a run and stops inside a read-only call, just before the call with effects; process B (this
test's kernel) recovers it once A's lease expired. The call with effects runs once; A killed
loses nothing more, and A frozen then thawed (a stale lease) writes nothing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from gigi_core.agent.confirmations import ConfirmationError
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.store.agent_tables import AgentRun, AgentRunStep
from gigi_core.store.tables import AuditEvent
from gigi_core.testing import open_test_kernel
from tests.agent.fenced import SECRET_KEY, USER, Adaptive, Fx

pytestmark = [  # slow group (still run by CI): several processes
    pytest.mark.parametrize("database_url", ["postgresql"], indirect=True),
    pytest.mark.slow,
]
LEASE = 1.5  # process A's lease: short, so the test waits little for its expiry
ROOT = Path(__file__).resolve().parents[2]


async def start_a(database_url: str, tmp_path: Path, *, hold: Path) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "FX_HOLD": str(hold),
        "GIGI_RUN_LEASE_SECONDS": str(LEASE),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agent.fenced",
        database_url,
        str(tmp_path / "a"),
        str(tmp_path / "ledger"),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def until(predicate, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not await predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def the_run(kernel) -> AgentRun | None:
    async with kernel.db.session() as s:
        return await s.scalar(select(AgentRun).where(AgentRun.guild_id == "g1"))


async def written(kernel, run_id: str) -> tuple[int, int]:
    async with kernel.db.session() as s:
        steps = await s.scalar(select(func.count()).where(AgentRunStep.run_id == run_id))
        audits = await s.scalar(select(func.count()).where(AuditEvent.run_id == run_id))
    return int(steps or 0), int(audits or 0)


@pytest.fixture
async def b(database_url, tmp_path):
    """Process B: this test's kernel, sharing the database and the run-state key with A."""
    folder = tmp_path / "b"
    folder.mkdir()
    fx = Fx(folder, tmp_path / "ledger")
    async with open_test_kernel(
        folder,
        plugins=[],
        extra_plugins=[("fx", fx)],
        database_url=database_url,
        secret_key=SECRET_KEY,
    ) as kernel:
        await kernel.enable_plugin("g1", "fx")
        yield kernel, fx


async def a_inside_the_look(proc, kernel, fx) -> AgentRun:
    """A has its run stored and sits in fx.look, right before fx.charge."""

    async def there() -> bool:
        assert proc.returncode is None, (await proc.stderr.read()).decode()[-2000:]
        return bool(fx.calls("look")) and await the_run(kernel) is not None

    await until(there)
    run = await the_run(kernel)
    assert run is not None and run.owner is not None
    assert run.owner.split(":")[1] == str(proc.pid)  # A holds it
    return run


async def stop(proc) -> None:
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


async def recover_after_the_lease(runtime: AgentRuntime, run_id: str):
    """B is refused while A's lease runs, then takes over within about one lease."""
    with pytest.raises(ConfirmationError, match="held by another Gigi process"):
        await runtime.recover(run_id, USER)
    started = time.monotonic()
    while True:
        try:
            reply = await runtime.recover(run_id, USER)
        except ConfirmationError as exc:
            assert "held by another" in str(exc)
            assert time.monotonic() - started < LEASE + 5
            await asyncio.sleep(0.1)
            continue
        return reply


async def test_a_killed_before_a_call_with_effects_is_recovered_on_b_once(
    b, database_url, tmp_path
) -> None:
    kernel, fx = b
    proc = await start_a(database_url, tmp_path, hold=tmp_path / "never")
    try:
        run = await a_inside_the_look(proc, kernel, fx)
        proc.send_signal(signal.SIGKILL)  # no goodbye, no last write
        await proc.wait()
        assert fx.calls("charge") == []
        runtime = AgentRuntime(kernel, model=Adaptive())
        reply = await recover_after_the_lease(runtime, run.id)
    finally:
        await stop(proc)
    assert (reply.status, reply.text) == ("done", "Charged.")
    assert fx.calls("charge") == [str(os.getpid())]  # once, on B
    ended = await the_run(kernel)
    assert ended is not None and (ended.status, ended.owner) == ("done", runtime.leases.owner)


async def test_a_thawed_with_a_stale_lease_writes_nothing(b, database_url, tmp_path) -> None:
    """A frozen past its lease, B takes the run; A thawed while B is still inside it stops at
    the call with effects (its in-flight marker matches no row) and writes nothing."""
    kernel, fx = b
    release = tmp_path / "release"
    inside, go_on = asyncio.Event(), asyncio.Event()

    async def hold_b(ctx) -> None:
        inside.set()
        await go_on.wait()

    fx.gate = hold_b
    proc = await start_a(database_url, tmp_path, hold=release)
    try:
        run = await a_inside_the_look(proc, kernel, fx)
        proc.send_signal(signal.SIGSTOP)  # frozen: no heartbeat, its lease runs out
        runtime = AgentRuntime(kernel, model=Adaptive())
        recovering = asyncio.create_task(recover_after_the_lease(runtime, run.id))
        await asyncio.wait_for(inside.wait(), LEASE + 10)
        await kernel.db.writer.drain()
        taken = await the_run(kernel)
        assert taken is not None and (taken.status, taken.owner) == (
            "running",
            runtime.leases.owner,
        )
        before = await written(kernel, run.id)
        release.touch()
        proc.send_signal(signal.SIGCONT)  # A goes on from inside fx.look
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()[-2000:]
        stale = json.loads(out.decode().strip().splitlines()[-1])
        assert (stale["status"], stale["reason"]) == ("moved", "lease_lost")
        assert fx.calls("charge") == []  # A never ran it
        assert await written(kernel, run.id) == before  # A added no step and no audit row
        go_on.set()
        reply = await recovering
    finally:
        go_on.set()
        await stop(proc)
    assert (reply.status, reply.text) == ("done", "Charged.")
    assert fx.calls("charge") == [str(os.getpid())]  # once, by B
    ended = await the_run(kernel)
    assert ended is not None and (ended.status, ended.owner) == ("done", runtime.leases.owner)
