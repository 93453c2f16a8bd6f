"""The bounded in-process processing queue: N workers, a maximum depth,
drop-oldest on overflow with a counted warning. Jobs hold message text only while queued;
nothing survives a restart."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("gigi_knowledge")


@dataclass(slots=True)
class Job:
    guild_id: str
    channel_id: str
    message_id: str
    payload: Any


class ProcessingQueue:
    def __init__(
        self, run: Callable[[Job], Awaitable[None]], *, depth: int, concurrency: int
    ) -> None:
        self._run = run
        self.depth = max(1, depth)
        self.concurrency = max(1, concurrency)
        self._jobs: deque[Job] = deque()
        self._wake = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._busy = 0
        self._running: set[asyncio.Future[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self.dropped = 0
        self.processed = 0
        self.failed = 0

    def put(self, job: Job) -> None:
        if len(self._jobs) >= self.depth:
            self._jobs.popleft()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                log.warning("knowledge: queue full, dropped %d oldest job(s) so far", self.dropped)
        self._jobs.append(job)
        self._idle.clear()
        self._wake.set()
        if not self._workers:
            self._start()

    def discard(self, guild_id: str, channel_id: str | None = None) -> int:
        """Drop queued jobs of a channel (secured, deleted) or a guild; returns how many."""
        before = len(self._jobs)
        kept = [
            j
            for j in self._jobs
            if not (j.guild_id == guild_id and channel_id in (None, j.channel_id))
        ]
        self._jobs.clear()
        self._jobs.extend(kept)
        return before - len(kept)

    def forget(self, guild_id: str, channel_id: str, message_ids: set[str]) -> None:
        """A queued message deleted or edited away: its job goes (its text with it)."""
        kept = [
            j
            for j in self._jobs
            if not (
                j.guild_id == guild_id
                and j.channel_id == channel_id
                and j.message_id in message_ids
            )
        ]
        self._jobs.clear()
        self._jobs.extend(kept)

    def forget_author(self, user_id: str, guild_id: str | None) -> int:
        """A member's erasure: their queued messages go (of a guild, or all); returns how many."""
        before = len(self._jobs)
        kept = [
            j
            for j in self._jobs
            if not (
                getattr(j.payload, "author_id", None) == user_id and guild_id in (None, j.guild_id)
            )
        ]
        self._jobs.clear()
        self._jobs.extend(kept)
        return before - len(kept)

    async def wait_running(self, seconds: float) -> bool:
        """Wait for the jobs running now (not those queued) to finish: an erasure must not
        be followed by writes from a window read before it."""
        running = list(self._running)
        if not running:
            return True
        _, pending = await asyncio.wait(running, timeout=seconds)
        return not pending

    def __len__(self) -> int:
        return len(self._jobs)

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._workers = [
            loop.create_task(self._work(), name=f"gigi-knowledge-{i}")
            for i in range(self.concurrency)
        ]

    async def _work(self) -> None:
        while True:
            if not self._jobs:
                if self._busy == 0:
                    self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            job = self._jobs.popleft()
            self._busy += 1
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._running.add(done)
            try:
                await self._run(job)
                self.processed += 1
            except Exception as exc:  # never the text: the class only
                self.failed += 1
                log.error("knowledge: processing a message failed: %s", type(exc).__name__)
            finally:
                job.payload = None
                self._busy -= 1
                self._running.discard(done)
                done.set_result(None)

    async def drain(self, seconds: float = 30.0) -> bool:
        """Wait until nothing is queued or running (tests, shutdown)."""
        try:
            async with asyncio.timeout(seconds):
                while self._jobs or self._busy:
                    self._idle.clear()
                    self._wake.set()
                    await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        self._jobs.clear()
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(BaseException):
                await task
        self._workers = []
