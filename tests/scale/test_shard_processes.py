"""Two real processes share shard_count=2 through the lease table on PostgreSQL; one is
SIGKILLed and the other takes its shard within the lease expiry (plus one beat)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

# In the slow group (still run by CI): several processes.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LEASE = 1.5


async def member(url: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.scale.shard_process",
        url,
        "2",
        str(LEASE),
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def held(proc) -> tuple[int, ...]:
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line, (await proc.stderr.read()).decode()[-2000:]
    return tuple(json.loads(line)["held"])


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_killing_one_shard_process_lets_the_other_take_its_shard(
    database_url, tmp_path
) -> None:
    from gigi_core.store.db import Database
    from gigi_core.store.migrate import upgrade

    db = Database(database_url)
    await upgrade(db, {})
    await db.close()
    procs = await asyncio.gather(member(database_url), member(database_url))
    try:
        first = await asyncio.gather(*(held(p) for p in procs))
        assert sorted(first) == [(0,), (1,)]  # started together: one shard each
        survivor, victim = procs
        victim.send_signal(signal.SIGKILL)
        await victim.wait()
        killed = time.monotonic()
        while (now := await held(survivor)) != (0, 1):
            assert len(now) == 1
            assert time.monotonic() - killed < LEASE * 2 + 5, "no takeover"
        taken_after = time.monotonic() - killed
        assert taken_after < LEASE + LEASE / 3 + 2  # within the lease plus one beat (+ slack)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
