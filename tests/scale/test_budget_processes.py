"""Two real processes fire 100 concurrent model calls each at one budget with room for 10,
on PostgreSQL and on one SQLite file (issue 30): exactly 10 calls reach the provider, the
rest are refused, and the window's spend is the budget, never more, with nothing left held."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from gigi_core.store.sealing import generate_key
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.budget_helpers import GUILD, MOST, configure, counters, usage_of

# In the slow group (still run by CI): several processes.
pytestmark = pytest.mark.slow

CALLS = 100
ROOT = Path(__file__).resolve().parents[2]


async def start_worker(*args: str) -> asyncio.subprocess.Process:
    """``tests.scale.budget_worker`` once it printed "ready" (its kernel is open)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.scale.budget_worker",
        *args,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line.startswith(b"ready"):
        raise AssertionError(f"the worker did not start: {(await proc.stderr.read())[-3000:]!r}")
    return proc


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
async def test_two_processes_never_spend_past_a_budget(database_url, tmp_path) -> None:
    key = generate_key()
    async with (
        open_test_kernel(
            tmp_path / "parent", plugins=["openai"], database_url=database_url, secret_key=key
        ) as kernel,
        FakeOpenAI() as fake,
    ):
        await configure(kernel, fake.base_url)
        await kernel.llm.set_budget(GUILD, "guild", None, limit=10 * MOST)
        fake.reply_text("ok", usage=usage_of(MOST), times=2 * CALLS)
        procs = [
            await start_worker(
                database_url,
                str(tmp_path / f"child{n}"),
                key,
                str(CALLS),
            )
            for n in range(2)
        ]
        for proc in procs:
            proc.stdin.write(b"go\n")
        said = await asyncio.gather(*(asyncio.wait_for(p.communicate(), 120) for p in procs))
        lines = [out.decode().split() for out, _ in said]
        assert all(p.returncode == 0 for p in procs), [err.decode()[-2000:] for _, err in said]
        ok = sum(int(line[1]) for line in lines)
        refused = sum(int(line[3]) for line in lines)
        assert (ok, refused) == (10, 2 * CALLS - 10), lines
        assert len(fake.requests_to("chat")) == 10
        assert await counters(kernel) == (10 * MOST, 0)
