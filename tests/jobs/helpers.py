"""Helpers for the jobs tests: a plugin whose jobs each test defines inline, waiting."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gigi_core import hookimpl
from gigi_core.testing import open_test_kernel

FAST = {
    "GIGI_JOBS_POLL_SECONDS": "0.05",
    "GIGI_JOBS_HEARTBEAT_SECONDS": "0.1",
    "GIGI_JOBS_STALL_SECONDS": "0.6",
    "GIGI_JOBS_RETRY_BASE_SECONDS": "0.02",
    "GIGI_JOBS_RETRY_MAX_SECONDS": "0.1",
    "GIGI_JOBS_GRACE_SECONDS": "0.3",
}


class JobsPlugin:
    """Registers ``jobs`` (name -> (fn, options)) through the public hook."""

    def __init__(self, jobs: dict[str, tuple[Callable[..., Any], dict[str, Any]]]) -> None:
        self.jobs = jobs

    @hookimpl
    def register_jobs(self, register: Any) -> None:
        for name, (fn, options) in self.jobs.items():
            register(name, fn, **options)


@asynccontextmanager
async def jobs_kernel(
    tmp_path: Path, database_url: str, jobs: dict[str, Any], *, home: str = "k"
) -> AsyncIterator[Any]:
    """A kernel with only the test jobs; ``home`` keeps two kernels on one database apart."""
    folder = tmp_path / home
    folder.mkdir(exist_ok=True)
    async with open_test_kernel(
        folder,
        plugins=[],
        extra_plugins=[("testjobs", JobsPlugin(jobs))],
        database_url=database_url,
    ) as kernel:
        yield kernel


async def until(predicate: Callable[[], Any], within: float = 10.0, every: float = 0.02) -> None:
    """Wait for ``predicate()`` (sync or async) to be true; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):  # bounded too: a hang fails the test, never stalls it
            value = await asyncio.wait_for(value, max(0.1, deadline - time.monotonic()))
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s")
        await asyncio.sleep(every)


async def drain_until(kernel: Any, job_id: str, status: str, within: float = 10.0) -> Any:
    """Run what is due until the job reaches ``status`` (retries come due after backoff)."""

    async def reached() -> bool:
        await kernel.jobs.run_until_idle()
        return (await kernel.jobs.get(job_id)).status == status

    await until(reached, within)
    return await kernel.jobs.get(job_id)


async def until_cancelled(ctx: Any) -> None:
    """What a long job does: work in steps, checking ``ctx.cancelled`` between them."""
    for _ in range(100_000):
        if ctx.cancelled:
            return
        await asyncio.sleep(0.02)
