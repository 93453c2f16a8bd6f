"""PostgreSQL restarted in the middle of a load of agent runs: the process reconnects, every
run it answered as done is stored as done, runs cut by the outage fail with an error (or are
left resumable), and nothing spins: the change feed comes back after a few retries."""

from __future__ import annotations

import asyncio
import logging
import time

from sqlalchemy import func, select

from gigi_core.agent.runtime import AgentRuntime
from gigi_core.store.agent_tables import AgentRun
from gigi_core.testing import backends, open_test_kernel
from gigi_core.testing.backends import fresh_postgres_database, stop_postgres
from tests.agent.fenced import Adaptive, Fx, ask

own_server = backends.own_postgres_server  # a server this test may stop


def restart(server) -> None:
    """Stop (fast: connections are cut) and start again with the same socket and data."""
    uri = server.get_uri()
    stop_postgres(server)
    time.sleep(0.5)  # a moment with no server at all
    server.ensure_postgres_running()  # the library's own start: same data, same socket
    assert server.get_uri() == uri


async def test_a_restart_mid_load_loses_no_answered_run_and_nothing_spins(
    own_server, tmp_path, caplog
) -> None:
    caplog.set_level(logging.WARNING)
    _, url = fresh_postgres_database(own_server.get_uri())
    fx = Fx(tmp_path, tmp_path / "ledger")
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("fx", fx)], database_url=url
    ) as kernel:
        await kernel.enable_plugin("g1", "fx")
        await kernel.changes.listen()
        await asyncio.wait_for(kernel.changes.listening.wait(), 10)
        runtime = AgentRuntime(kernel, model=Adaptive())
        answered: list[str] = []
        failed: list[str] = []
        stop_at = [float("inf")]

        async def member() -> None:
            while time.monotonic() < stop_at[0]:
                try:
                    reply = await runtime.handle(ask())
                except Exception as exc:  # the outage: an error for this request
                    failed.append(type(exc).__name__)
                    await asyncio.sleep(0.05)
                    continue
                if reply.status == "done":
                    answered.append(reply.run_id or "")
                else:
                    failed.append(reply.status)

        members = [asyncio.create_task(member()) for _ in range(4)]
        started = time.monotonic()
        while len(answered) < 20:
            assert time.monotonic() - started < 60, failed[-3:]
            await asyncio.sleep(0.05)
        before = len(answered)
        await asyncio.to_thread(restart, own_server)
        back = time.monotonic()
        while len(answered) < before + 20:  # it serves again, on fresh connections
            assert time.monotonic() - back < 30, f"no recovery after the restart: {failed[-3:]}"
            await asyncio.sleep(0.05)
        recovered_in = time.monotonic() - back
        stop_at[0] = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*members), 30)
        await asyncio.wait_for(kernel.changes.listening.wait(), 30)  # LISTEN is back
        await kernel.db.writer.drain()
        async with kernel.db.session() as s:
            statuses = dict(
                (
                    await s.execute(
                        select(AgentRun.id, AgentRun.status).where(AgentRun.id.in_(answered))
                    )
                ).all()
            )
            stored = await s.scalar(select(func.count()).select_from(AgentRun))
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    print(  # the figures docs/deploying.md quotes
        f"restart: answered {len(answered)}, failed {len(failed)} ({sorted(set(failed))}), "
        f"serving again {recovered_in:.1f} s after the start returned, {len(retries)} retries"
    )
    assert recovered_in < 30
    assert len(statuses) == len(answered) and set(statuses.values()) == {"done"}
    assert stored >= len(answered)  # cut runs are stored as failed or left running
    assert len(retries) < 10  # backoff, not a loop
    assert len(fx.calls("charge")) >= len(answered)
