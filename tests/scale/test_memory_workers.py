"""Two real worker processes drain memory's jobs on one PostgreSQL (``memory.sync`` pages
channel histories into the ledger, ``memory.embed`` cuts segments and vectors); one is
SIGKILLed mid-sync. Every message ends up in the ledger once, with one segment and vector,
and the dead worker's job runs again on the other after its heartbeat expired."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from gigi_core import Actor
from gigi_core.testing import open_test_kernel
from tests.scale.memory_worker import GUILD, KEY, HashEmbedder, History, Plugin

# In the slow group (still run by CI): several processes.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CHANNELS, PER_CHANNEL, PAGE_DELAY = 4, 300, 0.15  # 3 pages a channel
FAST = {
    "GIGI_JOBS_POLL_SECONDS": "0.05",
    "GIGI_JOBS_HEARTBEAT_SECONDS": "0.2",
    "GIGI_JOBS_STALL_SECONDS": "1.5",
    "GIGI_JOBS_RETRY_BASE_SECONDS": "0.05",
    "GIGI_JOBS_RETRY_MAX_SECONDS": "0.2",
    "GIGI_MEMORY_POLICY_SECONDS": "1",
}
ADMIN = Actor(id="admin", is_admin=True)


async def start_module(
    module: str, *args: str, env: dict[str, str] | None = None, stderr: Path | None = None
) -> asyncio.subprocess.Process:
    """``python -m module args`` with the fast job settings, once it has printed "ready";
    ``stderr`` keeps the process's log in a file (read after it ends) instead of a pipe."""
    err = await asyncio.to_thread(stderr.open, "w") if stderr else asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        env={
            **os.environ,
            **FAST,
            **(env or {}),
            "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=err,
    )
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line.startswith(b"ready"):
        if stderr:
            said = await asyncio.to_thread(stderr.read_text)
        else:
            said = (await proc.stderr.read()).decode()
        raise AssertionError(f"{module} did not start: {said[-3000:]}")
    return proc


async def worker(
    url: str, home: Path, log: Path, delay: float = PAGE_DELAY
) -> asyncio.subprocess.Process:
    args = (url, str(home), str(log), str(delay), str(CHANNELS), str(PER_CHANNEL))
    return await start_module("tests.scale.memory_worker", *args)


def lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


async def scalar(kernel, sql: str) -> int:
    async with kernel.db.engine.connect() as conn:
        return int(await conn.scalar(sa.text(sql)))


async def exactly_once(kernel, sent: int, mentions: int) -> None:
    """One ledger row, mention set, segment and vector per message; no orphan segment."""
    counts = {
        "ledger": "SELECT count(*) FROM memory_messages",
        "distinct messages": "SELECT count(DISTINCT message_id) FROM memory_messages",
        "not embedded": "SELECT count(*) FROM memory_messages WHERE vector_model IS NULL",
        "mentions": "SELECT count(*) FROM memory_mentions",
        "segments": "SELECT count(*) FROM memory_segments",
        "distinct segments": "SELECT count(DISTINCT (message_row_id, seq)) FROM memory_segments",
        "orphans": "SELECT count(*) FROM memory_segments s LEFT JOIN memory_messages m "
        "ON m.id = s.message_row_id WHERE m.id IS NULL",
    }
    found = {name: await scalar(kernel, sql) for name, sql in counts.items()}
    assert found == {
        "ledger": sent,
        "distinct messages": sent,
        "not embedded": 0,
        "mentions": mentions,
        "segments": sent,  # every message is short: one segment (and vector) each
        "distinct segments": sent,
        "orphans": 0,
    }


async def settled(kernel, deadline: float, survivor, names: dict[str, int]) -> list:
    """Wait until every job ended, ``names`` counts each job, and nothing awaits vectors."""
    while True:
        jobs = await kernel.jobs.list(limit=500)
        ended = jobs and all(j.status in ("done", "failed", "cancelled") for j in jobs)
        if (
            ended
            and all(len([j for j in jobs if j.name == n]) >= k for n, k in names.items())
            and not await scalar(
                kernel, "SELECT count(*) FROM memory_messages WHERE vector_model IS NULL"
            )
        ):
            return jobs
        assert time.monotonic() < deadline, [(j.name, j.status) for j in jobs]
        assert survivor.returncode is None
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_killing_a_worker_mid_sync_duplicates_and_loses_nothing(
    database_url, tmp_path, monkeypatch
) -> None:
    for name, value in FAST.items():
        monkeypatch.setenv(name, value)
    log = tmp_path / "log"
    embedder = Plugin(HashEmbedder())
    async with open_test_kernel(
        tmp_path / "parent",
        plugins=["memory"],
        extra_plugins=[("scale-embed", embedder)],
        database_url=database_url,
        secret_key=KEY,
    ) as kernel:
        await kernel.enable_plugin(GUILD, "memory")
        kernel.history.register("scale", History(CHANNELS, PER_CHANNEL, None, 0))
        channels = [f"c{c}" for c in range(CHANNELS)]
        for channel in channels:
            for action, args in (
                ("memory.enable", {"channel": channel, "retention_days": 30}),
                ("memory.sync", {"channel": channel}),
            ):
                outcome = await kernel.call_tool(
                    action, args, actor=ADMIN, guild_id=GUILD, channel_id=channel
                )
                assert outcome.status == "ok", outcome
        for n in (0, 1):
            (tmp_path / f"w{n}").mkdir()
        workers = list(
            await asyncio.gather(*(worker(database_url, tmp_path / f"w{n}", log) for n in (0, 1)))
        )
        try:
            started = time.monotonic()
            while not any(k == "page" and before != "None" for _, k, _, before in _pages(log)):
                assert time.monotonic() - started < 60, "no sync reached its second page"
                await asyncio.sleep(0.02)
            # The worker on a second page has committed the first page and checkpointed.
            victim_pid = next(pid for pid, k, _, b in _pages(log) if b != "None")
            victim = next(p for p in workers if str(p.pid) == victim_pid)
            victim.send_signal(signal.SIGKILL)  # kill -9: no heartbeat, no goodbye
            await victim.wait()
            killed = time.monotonic()
            survivor = next(p for p in workers if p is not victim)
            jobs = await settled(kernel, killed + 60, survivor, {"memory.sync": CHANNELS})
            # What the dead worker was running ran again on the survivor, after the stall.
            synced = [j for j in jobs if j.name == "memory.sync"]
            retried = [j for j in synced if j.attempts > 1]
            assert retried, [(j.key, j.attempts) for j in synced]
            assert all(j.status == "done" for j in jobs), [(j.name, j.status) for j in jobs]
            assert any(j.worker and j.worker.split(":")[1] == str(survivor.pid) for j in retried)
            sent = CHANNELS * PER_CHANNEL
            await exactly_once(kernel, sent, sent // 5)
            async with kernel.db.engine.connect() as conn:
                records = (
                    await conn.execute(
                        sa.text("SELECT channel_id, status, imported FROM memory_backfills")
                    )
                ).all()
            assert sorted((r.channel_id, r.status) for r in records) == [
                (c, "done") for c in channels
            ]
            # The checkpoint made the re-run skip what the dead worker had committed.
            assert sum(r.imported for r in records) == sent
            paged = Counter(ch for _, _, ch, _ in _pages(log))
            assert set(paged) == set(channels) and all(n >= 3 for n in paged.values())
        finally:
            for proc in workers:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGKILL)
                await proc.wait()


def _pages(log: Path) -> list[tuple[str, str, str, str]]:
    return [(p[0], p[1], p[2], p[3]) for p in lines(log) if p[1] == "page"]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_killing_a_worker_mid_embedding_duplicates_no_segment(
    database_url, tmp_path, monkeypatch
) -> None:
    """Live messages written by the gateway's writer; the worker embedding them is killed
    after its first batch committed: the other worker embeds the rest, none twice."""
    from datetime import UTC, datetime

    import gigi_memory

    from gigi_core.events import MessageCreated

    for name, value in FAST.items():
        monkeypatch.setenv(name, value)
    log = tmp_path / "log"
    sent = 1000  # 8 batches of 128, 0.3 s each at the embedder
    async with open_test_kernel(
        tmp_path / "parent",
        plugins=["memory"],
        extra_plugins=[("scale-embed", Plugin(HashEmbedder()))],
        database_url=database_url,
        secret_key=KEY,
    ) as kernel:
        await kernel.enable_plugin(GUILD, "memory")
        await kernel.call_tool(
            "memory.enable",
            {"channel": "c0", "retention_days": 30},
            actor=ADMIN,
            guild_id=GUILD,
            channel_id="c0",
        )
        for n in (0, 1):
            (tmp_path / f"w{n}").mkdir()
        workers = list(
            await asyncio.gather(
                *(worker(database_url, tmp_path / f"w{n}", log, 0.3) for n in (0, 1))
            )
        )
        try:
            for i in range(sent):
                await kernel.publish(
                    MessageCreated(
                        guild_id=GUILD,
                        message_id=str(20_000_000 + i),
                        channel_id="c0",
                        author_id=f"u{i % 7}",
                        created_at=datetime.now(UTC),
                        text=f"live note {i} about postgres",
                        mentioned_user_ids=("u1",) if i % 4 == 0 else (),
                    )
                )
            await kernel.events.drain()
            assert await gigi_memory.flush(kernel, 30)  # the ledger is written, the job queued
            started = time.monotonic()
            not_yet = "SELECT count(*) FROM memory_messages WHERE vector_model IS NULL"
            while await scalar(kernel, not_yet) > sent - 128:  # a first batch is committed
                assert time.monotonic() - started < 60, "no embedding batch committed"
                await asyncio.sleep(0.02)
            victim_pid = [p for p in lines(log) if p[1] == "embed"][-1][0]  # mid-batch now
            victim = next(p for p in workers if str(p.pid) == victim_pid)
            victim.send_signal(signal.SIGKILL)
            await victim.wait()
            killed, logged = time.monotonic(), len(lines(log))
            survivor = next(p for p in workers if p is not victim)
            jobs = await settled(kernel, killed + 60, survivor, {"memory.embed": 1})
            embedded = await scalar(
                kernel, "SELECT count(*) FROM memory_messages WHERE vector_model IS NOT NULL"
            )
            assert embedded == sent
            after = [p for p in lines(log)[logged:] if p[1] == "embed"]
            assert after, "the survivor never embedded: the dead worker's job did not re-run"
            assert all(j.status == "done" for j in jobs), [(j.name, j.status) for j in jobs]
            assert any(  # the job the dead worker held, finished by the survivor
                j.attempts > 1 and j.worker and j.worker.split(":")[1] == str(survivor.pid)
                for j in jobs
                if j.name == "memory.embed"
            )
            await exactly_once(kernel, sent, sent // 4)
        finally:
            for proc in workers:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGKILL)
                await proc.wait()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_two_workers_embed_one_guild_at_once_and_no_message_twice(
    database_url, tmp_path, monkeypatch
) -> None:
    """A backlog in one guild: the first job asks for helpers, the other worker takes one,
    both embed at once (their embedding calls interleave), and every message is embedded
    by exactly one of them: the inputs both embedders saw add up to the messages sent."""
    from datetime import UTC, datetime

    import gigi_memory

    from gigi_core.events import MessageCreated

    for name, value in FAST.items():
        monkeypatch.setenv(name, value)
    log = tmp_path / "log"
    sent = 2000  # 16 batches of 128, 0.2 s each at the embedder: 3 s for one worker alone
    async with open_test_kernel(
        tmp_path / "parent",
        plugins=["memory"],
        extra_plugins=[("scale-embed", Plugin(HashEmbedder()))],
        database_url=database_url,
        secret_key=KEY,
    ) as kernel:
        await kernel.enable_plugin(GUILD, "memory")
        channels = [f"c{c}" for c in range(CHANNELS)]
        for channel in channels:
            await kernel.call_tool(
                "memory.enable",
                {"channel": channel, "retention_days": 30},
                actor=ADMIN,
                guild_id=GUILD,
                channel_id=channel,
            )
        for n in (0, 1):
            (tmp_path / f"w{n}").mkdir()
        workers = list(
            await asyncio.gather(
                *(worker(database_url, tmp_path / f"w{n}", log, 0.2) for n in (0, 1))
            )
        )
        try:
            for i in range(sent):
                await kernel.publish(
                    MessageCreated(
                        guild_id=GUILD,
                        message_id=str(30_000_000 + i),
                        channel_id=channels[i % CHANNELS],
                        author_id=f"u{i % 7}",
                        created_at=datetime.now(UTC),
                        text=f"backlog note {i} about postgres",
                        mentioned_user_ids=("u2",) if i % 5 == 0 else (),
                    )
                )
            await kernel.events.drain()
            assert await gigi_memory.flush(kernel, 30)
            jobs = await settled(kernel, time.monotonic() + 60, workers[0], {"memory.embed": 2})
            assert all(w.returncode is None for w in workers)
            assert all(j.status == "done" for j in jobs), [(j.key, j.status) for j in jobs]
            await exactly_once(kernel, sent, sent // 5)
            calls = [(p[0], int(p[2])) for p in lines(log) if p[1] == "embed"]
            by_pid = Counter()
            for pid, n in calls:
                by_pid[pid] += n
            assert set(by_pid) == {str(w.pid) for w in workers}, by_pid  # both embedded
            assert sum(by_pid.values()) == sent  # and no message was embedded twice
            switches = sum(a[0] != b[0] for a, b in itertools.pairwise(calls))
            assert switches >= 2, calls  # interleaved: at the same time, not one after another
            helpers = [j for j in jobs if j.key and j.key.startswith(f"embed:{GUILD}:+")]
            assert helpers and len(jobs) < 40  # helpers were queued, the table not flooded
        finally:
            for proc in workers:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGKILL)
                await proc.wait()
