"""Two real worker processes drain knowledge's scheduled jobs on one PostgreSQL; the one
running a job is SIGKILLed mid-job and the other re-runs it after the heartbeat expired.

``knowledge.summaries`` (one job over four channels; the embedder hangs in its second call): one summary per
(scope, granularity, period start) and one vector per summary. ``knowledge.staleness``
(the surface hangs after delivering the second nudge): each nudge is posted once, because an
action is claimed before its nudge is posted (a kill between claim and post loses that one)."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from gigi_core import Actor
from gigi_core.testing import open_test_kernel
from tests.scale.memory_worker import KEY
from tests.scale.test_memory_workers import FAST, lines, scalar, start_module

# In the slow group (still run by CI): several processes.
pytestmark = pytest.mark.slow

GUILD, CHANNELS = "g1", [f"k{c}" for c in range(4)]
ADMIN = Actor(id="admin", is_admin=True)
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # a Tuesday: Monday's daily is due, no weekly
MONDAY_NOON_MS = int(datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp() * 1000)
DAY_MS = 86_400_000


async def worker(url: str, home: Path, log: Path, delay: float) -> asyncio.subprocess.Process:
    await asyncio.to_thread(home.mkdir)
    args = (url, str(home), str(log), str(delay))
    return await start_module("tests.scale.knowledge_worker", *args)


def common(channel: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "guild_id": GUILD,
        "channel_id": channel,
        "asserted_by": ["u1"],
        "confidence": 0.9,
        "tags": [],
        "source_ref": {},
        "created_ms": MONDAY_NOON_MS,
    }


async def seeded(kernel: Any) -> None:
    """Knowledge on in four channels, each with one decision on Monday and one open action
    past its deadline (rows as extraction stores them; extraction itself is not run here)."""
    from gigi_knowledge import tables

    await kernel.enable_plugin(GUILD, "knowledge")
    async with kernel.db.engine.begin() as conn:  # no schedule fires while the test runs
        for name, spec in kernel.registry.jobs.items():
            if spec.schedule is not None:
                await conn.execute(
                    sa.text(
                        "INSERT INTO gigi_job_schedules (name, schedule, last_tick, updated_at) "
                        "VALUES (:n, :s, :t, :t)"
                    ),
                    {"n": name, "s": spec.schedule, "t": datetime(2100, 1, 1, tzinfo=UTC)},
                )
    for channel in CHANNELS:
        outcome = await kernel.call_tool(
            "knowledge.enable",
            {"channel": channel, "timezone": "UTC"},
            actor=ADMIN,
            guild_id=GUILD,
            channel_id=channel,
        )
        assert outcome.status == "ok", outcome
    async with kernel.db.engine.begin() as conn:
        for channel in CHANNELS:
            await conn.execute(
                sa.insert(tables.decisions).values(
                    **common(channel),
                    summary=f"The team in {channel} drops the cache layer",
                    decided_by=["u1"],
                    decided_ms=MONDAY_NOON_MS,
                    status="active",
                )
            )
            await conn.execute(
                sa.insert(tables.actions).values(
                    **common(channel),
                    description=f"review the API of {channel}",
                    owner_id="u1",
                    deadline_ms=MONDAY_NOON_MS - DAY_MS,
                    status="open",
                )
            )


async def run_and_kill(
    kernel: Any, tmp_path: Path, url: str, job: str, payload: dict[str, Any], kind: str
) -> tuple[Any, Any, Path]:
    """Two workers; ``job`` deferred; the worker that logged the second ``kind`` line (its
    first effect done; it hangs in that call) is SIGKILLed mid-call; the job's end state
    once the other ran it."""
    log = tmp_path / "log"
    workers = list(
        await asyncio.gather(*(worker(url, tmp_path / f"w{n}", log, 0.1) for n in (0, 1)))
    )
    try:
        job_id = await kernel.jobs.defer(job, payload)
        started = time.monotonic()
        while len([p for p in lines(log) if p[1] == kind]) < 2:
            assert time.monotonic() - started < 60, f"no second {kind} logged"
            await asyncio.sleep(0.02)
        victim_pid = [p for p in lines(log) if p[1] == kind][1][0]
        victim = next(p for p in workers if str(p.pid) == victim_pid)
        victim.send_signal(signal.SIGKILL)  # kill -9 inside the call
        await victim.wait()
        survivor = next(p for p in workers if p is not victim)
        while (info := await kernel.jobs.get(job_id)).status not in ("done", "failed"):
            assert time.monotonic() - started < 60, (info.status, info.attempts)
            assert survivor.returncode is None
            await asyncio.sleep(0.1)
        return info, survivor, log
    finally:
        for proc in workers:
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
            await proc.wait()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_killing_a_worker_mid_summaries_writes_each_summary_and_vector_once(
    database_url, tmp_path, monkeypatch
) -> None:
    for name, value in FAST.items():
        monkeypatch.setenv(name, value)
    async with open_test_kernel(
        tmp_path / "parent", plugins=["knowledge"], database_url=database_url, secret_key=KEY
    ) as kernel:
        await seeded(kernel)
        info, survivor, log = await run_and_kill(
            kernel, tmp_path, database_url, "knowledge.summaries", {"now": NOW.isoformat()}, "embed"
        )
        assert info.status == "done" and info.attempts == 2, (info.status, info.attempts)
        assert info.worker.split(":")[1] == str(survivor.pid)  # re-run on the survivor
        embeds = Counter(p[0] for p in lines(log) if p[1] == "embed")
        assert embeds[str(survivor.pid)] >= 3  # it skipped the committed channel, at most
        summaries = "SELECT count(*) FROM knowledge_summaries"
        assert await scalar(kernel, summaries) == len(CHANNELS)
        assert await scalar(
            kernel,
            "SELECT count(DISTINCT (guild_id, scope_type, scope_id, granularity, "
            "period_start_ms)) FROM knowledge_summaries WHERE granularity = 'daily'",
        ) == len(CHANNELS)
        async with kernel.db.engine.connect() as conn:
            per_summary = (
                await conn.execute(
                    sa.text(
                        "SELECT s.scope_id, count(e.id) FROM knowledge_summaries s "
                        "LEFT JOIN knowledge_embeddings e ON e.source_type = 'summary' "
                        "AND e.source_id = s.id GROUP BY s.scope_id"
                    )
                )
            ).all()
        assert sorted(per_summary) == [(c, 1) for c in CHANNELS]
        orphans = (
            "SELECT count(*) FROM knowledge_embeddings e LEFT JOIN knowledge_summaries s "
            "ON s.id = e.source_id WHERE e.source_type = 'summary' AND s.id IS NULL"
        )
        assert await scalar(kernel, orphans) == 0


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_killing_a_worker_mid_staleness_posts_each_nudge_once(
    database_url, tmp_path, monkeypatch
) -> None:
    for name, value in FAST.items():
        monkeypatch.setenv(name, value)
    async with open_test_kernel(
        tmp_path / "parent", plugins=["knowledge"], database_url=database_url, secret_key=KEY
    ) as kernel:
        await seeded(kernel)
        info, survivor, log = await run_and_kill(
            kernel, tmp_path, database_url, "knowledge.staleness", {}, "post"
        )
        assert info.status == "done" and info.attempts == 2, (info.status, info.attempts)
        assert (
            await scalar(kernel, "SELECT count(*) FROM knowledge_actions WHERE nudged_ms IS NULL")
            == 0
        )  # every action was nudged
        posts = Counter(p[3] for p in lines(log) if p[1] == "post")
        assert len(posts) == len(CHANNELS)
        assert set(posts.values()) == {1}, posts  # each action's nudge posted once
