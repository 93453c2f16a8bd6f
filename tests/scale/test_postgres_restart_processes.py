"""PostgreSQL restarted in the middle of a load served by two processes: this one, like a
gateway, answers agent runs and writes memory's ledger from live messages; a real worker
process (``memory_worker``) drains ``memory.embed``. Both reconnect, no answered run and no
published message is lost, every message ends with one vector, and neither process loops:
the retries each logs are bounded."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import gigi_memory
import pytest
import sqlalchemy as sa

from gigi_core import Actor
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.events import MessageCreated
from gigi_core.store.agent_tables import AgentRun
from gigi_core.testing import open_test_kernel
from gigi_core.testing.backends import fresh_postgres_database
from tests.agent.fenced import Adaptive, Fx, ask
from tests.scale.memory_worker import GUILD, KEY, HashEmbedder, Plugin
from tests.scale.test_memory_workers import FAST, scalar, start_module
from tests.scale.test_postgres_restart import own_server, restart

# In the slow group (still run by CI): several processes.
pytestmark = pytest.mark.slow

__all__ = ["own_server"]  # the fixture, imported for pytest
ROOT = Path(__file__).resolve().parents[2]
ADMIN = Actor(id="admin", is_admin=True)
RATE = 100  # live messages a second into memory


def tail(err: Path) -> str:
    return err.read_text()[-3000:]


def warnings_of(err: Path) -> list[str]:
    """The worker's logged warnings and errors (its stderr)."""
    return [
        line for line in err.read_text().splitlines() if " WARNING " in line or " ERROR " in line
    ]


async def start_worker(url: str, home: Path, err: Path) -> asyncio.subprocess.Process:
    await asyncio.to_thread(home.mkdir)
    args = (url, str(home), "-", "0", "0", "0")
    logs = {"SCALE_WORKER_LOGS": "1"}
    return await start_module("tests.scale.memory_worker", *args, env=logs, stderr=err)


async def test_a_restart_under_two_processes_loses_nothing_and_nothing_spins(
    own_server, tmp_path, caplog, monkeypatch
) -> None:
    for name, value in FAST.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.WARNING)
    _, url = fresh_postgres_database(own_server.get_uri())
    fx = Fx(tmp_path, tmp_path / "ledger")
    err = tmp_path / "worker.err"
    async with open_test_kernel(
        tmp_path / "gateway",
        plugins=["memory"],
        extra_plugins=[("fx", fx), ("scale-embed", Plugin(HashEmbedder()))],
        database_url=url,
        secret_key=KEY,
    ) as kernel:
        for plugin in ("fx", "memory"):
            await kernel.enable_plugin(GUILD, plugin)
        outcome = await kernel.call_tool(
            "memory.enable",
            {"channel": "c0", "retention_days": 30},
            actor=ADMIN,
            guild_id=GUILD,
            channel_id="c0",
        )
        assert outcome.status == "ok", outcome
        await kernel.changes.listen()
        await asyncio.wait_for(kernel.changes.listening.wait(), 10)
        worker = await start_worker(url, tmp_path / "worker", err)
        runtime = AgentRuntime(kernel, model=Adaptive())
        answered: list[str] = []
        failed: list[str] = []
        published = [0]
        stop_at = [float("inf")]

        async def member() -> None:
            while time.monotonic() < stop_at[0]:
                try:
                    reply = await runtime.handle(ask())
                except Exception as exc:  # the outage: an error for this request
                    failed.append(type(exc).__name__)
                    await asyncio.sleep(0.05)
                    continue
                (answered if reply.status == "done" else failed).append(
                    reply.run_id if reply.status == "done" else reply.status
                )

        async def surface() -> None:  # a gateway's on_message: build the event, publish
            while time.monotonic() < stop_at[0]:
                await kernel.publish(
                    MessageCreated(
                        guild_id=GUILD,
                        message_id=str(30_000_000 + published[0]),
                        channel_id="c0",
                        author_id=f"u{published[0] % 7}",
                        created_at=datetime.now(UTC),
                        text=f"live note {published[0]} about the outage",
                    )
                )
                published[0] += 1
                await asyncio.sleep(1 / RATE)

        embedded = "SELECT count(*) FROM memory_messages WHERE vector_model IS NOT NULL"
        tasks = [asyncio.create_task(member()) for _ in range(3)]
        tasks.append(asyncio.create_task(surface()))
        try:
            started = time.monotonic()
            while len(answered) < 20 or await scalar(kernel, embedded) < 50:
                assert time.monotonic() - started < 60, (len(answered), failed[-3:])
                await asyncio.sleep(0.05)
            runs_before, vectors_before = len(answered), await scalar(kernel, embedded)
            await asyncio.to_thread(restart, own_server)
            back = time.monotonic()
            while len(answered) < runs_before + 20:  # the gateway serves again
                assert time.monotonic() - back < 30, f"no run after the restart: {failed[-3:]}"
                await asyncio.sleep(0.05)
            runs_in = time.monotonic() - back
            published_at_restart = published[0]
            while True:  # the worker embeds again: messages sent after the restart
                n = await scalar(kernel, embedded)
                if n >= published_at_restart:
                    break
                assert time.monotonic() - back < 45, f"worker stuck at {n} vectors"
                assert worker.returncode is None, tail(err)
                await asyncio.sleep(0.1)
            vectors_in = time.monotonic() - back
            stop_at[0] = time.monotonic()
            await asyncio.wait_for(asyncio.gather(*tasks), 30)
            await kernel.events.drain()
            assert await gigi_memory.flush(kernel, 30)
            sent = published[0]
            while await scalar(kernel, embedded) < sent:  # the last messages' vectors
                assert time.monotonic() - back < 75, "the last messages were never embedded"
                await asyncio.sleep(0.1)
            await asyncio.wait_for(kernel.changes.listening.wait(), 30)  # LISTEN is back
            await kernel.db.writer.drain()
            async with kernel.db.session() as s:
                statuses = dict(
                    (
                        await s.execute(
                            sa.select(AgentRun.id, AgentRun.status).where(AgentRun.id.in_(answered))
                        )
                    ).all()
                )
            counts = {
                "ledger": await scalar(kernel, "SELECT count(*) FROM memory_messages"),
                "distinct": await scalar(
                    kernel, "SELECT count(DISTINCT message_id) FROM memory_messages"
                ),
                "segments": await scalar(kernel, "SELECT count(*) FROM memory_segments"),
            }
            stats = kernel.gigi_memory.writer.stats
            jobs = sorted(
                Counter((j.name, j.status, j.attempts) for j in await kernel.jobs.list()).items()
            )
            assert worker.returncode is None, tail(err)  # alive, not crashed
        finally:
            stop_at[0] = 0
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(worker.wait(), 10)
                except TimeoutError:
                    worker.kill()
                    await worker.wait()
    gateway_retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    worker_warnings = warnings_of(err)
    print(  # the figures docs/deploying.md quotes
        f"two-process restart: runs answered {len(answered)} ({runs_before} before), failed "
        f"{len(failed)} ({sorted(set(failed))}); serving again {runs_in:.1f} s after the start "
        f"returned; messages {sent} ({vectors_before} embedded before), all embedded "
        f"{vectors_in:.1f} s after; writer retries {stats.retries}, dropped {stats.dropped}, "
        f"failed {stats.failed}; gateway retry lines {len(gateway_retries)}, worker warning "
        f"lines {len(worker_warnings)}; stored {counts}, answered runs stored "
        f"{sorted(Counter(statuses.values()).items())} of {len(answered)}; jobs {jobs}"
    )
    for line in worker_warnings:
        print("  worker:", line)
    assert len(statuses) == len(answered), (len(statuses), len(answered))
    assert set(statuses.values()) == {"done"}, Counter(statuses.values())
    assert counts == {"ledger": sent, "distinct": sent, "segments": sent}  # none lost, none twice
    assert stats.dropped == 0 and stats.failed == 0, stats
    # Backoff, not a loop: 7-21 worker lines were seen over a 0.5 s outage; a loop at the
    # 0.05 s poll would log hundreds before the server was back.
    assert len(gateway_retries) < 20, len(gateway_retries)
    assert len(worker_warnings) < 60, worker_warnings[-5:]
