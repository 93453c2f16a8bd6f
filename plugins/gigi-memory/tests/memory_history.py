"""A surface's history reader for the sync tests: pages of a message list, with faults."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from memory_helpers import ago, call, message

from gigi_core.events import HistoryForbidden, HistoryPage


class FakeHistory:
    """A surface's history reader over a list of messages (oldest first), with faults."""

    def __init__(self, messages: list, *, fail_on_page: int | None = None) -> None:
        self.messages = messages
        self.asked: list[str | None] = []
        self.fail_on_page = fail_on_page
        self.forbidden = False

    def serves(self, guild_id: str) -> bool:
        return guild_id == "g1"

    async def page(self, guild_id, channel_id, *, before, limit) -> HistoryPage:
        self.asked.append(before)
        if self.forbidden:
            raise HistoryForbidden(f"Gigi may not read the history of <#{channel_id}>")
        if self.fail_on_page is not None and len(self.asked) == self.fail_on_page:
            self.fail_on_page = None
            raise ConnectionError("the process died mid-sync")
        ours = [m for m in reversed(self.messages) if m.channel_id == channel_id]
        if before is not None:
            ours = [m for m in ours if int(m.message_id) < int(before)]
        chunk = ours[:limit]
        return HistoryPage(tuple(chunk), chunk[-1].message_id if len(chunk) == limit else None)


class GatedHistory(FakeHistory):
    """Serves page 1 at once; every later page waits until ``go`` is set. ``reading`` is
    set when a later page is asked for (the job is inside it), ``forbid_from`` makes that
    page and the ones after it raise ``HistoryForbidden``, as Discord does when Gigi
    loses Read Message History mid-way."""

    def __init__(self, messages: list, *, forbid_from: int | None = None) -> None:
        super().__init__(messages)
        self.go = asyncio.Event()
        self.reading = asyncio.Event()
        self.forbid_from = forbid_from

    async def page(self, guild_id, channel_id, *, before, limit) -> HistoryPage:
        if self.asked:
            self.reading.set()
            await self.go.wait()
        if self.forbid_from is not None and len(self.asked) + 1 >= self.forbid_from:
            self.forbidden = True
        return await super().page(guild_id, channel_id, before=before, limit=limit)


def history(n: int, **kw: Any) -> list:
    """``n`` old messages mentioning postgres, ids 5000.., ten days ago, oldest first."""
    start = ago(days=10)
    return [
        message(
            f"old postgres note {i}",
            message_id=str(5000 + i),
            created_at=start + timedelta(minutes=i),
            **kw,
        )
        for i in range(n)
    ]


async def sync(kernel: Any, **args: Any) -> dict:
    return await call(kernel, "sync", channel="c1", **args)


async def finish(kernel: Any) -> None:
    for _ in range(20):
        await kernel.jobs.run_until_idle()
        jobs = await kernel.jobs.list(name="memory.sync")
        if not any(j.status in ("queued", "running") for j in jobs):
            return
    raise AssertionError("the sync job did not finish")


async def ended(kernel: Any, job_id: str, seconds: float = 15.0) -> Any:
    """The job's record once it left queued/running (a started worker runs it)."""
    async with asyncio.timeout(seconds):
        while True:
            info = await kernel.jobs.get(job_id)
            if info.status not in ("queued", "running"):
                return info
            await asyncio.sleep(0.05)
