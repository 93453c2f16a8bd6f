"""One ``KnowledgeService`` per kernel: the enabled-channel cache, the sliding windows, the
processing queue and the in-memory "last message" times for catch-me-up.

Kept on the kernel as ``kernel.gigi_knowledge`` (as guild memory does); ``startup`` loads the
channel cache, ``shutdown`` stops the workers and drops every window.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import settings, tables
from gigi_knowledge.ingest.queue import Job, ProcessingQueue
from gigi_knowledge.ingest.window import Windows

log = logging.getLogger("gigi_knowledge")
ATTRIBUTE = "gigi_knowledge"


@dataclass(frozen=True)
class ChannelInfo:
    enabled: bool
    timezone: str
    context: str  # purpose / type / tags, for the extraction prompt
    parent: str | None = None  # a thread's parent channel, whose observation state it has


def now_ms() -> int:
    return int(time.time() * 1000)


def context_line(row: Any) -> str:
    parts = []
    if row.purpose:
        parts.append(f"purpose: {row.purpose}")
    if row.context_type:
        parts.append(f"type: {row.context_type}")
    if row.tags:
        parts.append(f"tags: {', '.join(row.tags)}")
    return "; ".join(parts)


class KnowledgeService:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.engine = kernel.db.engine
        self.dialect: str = kernel.db.dialect
        self.settings = settings.load()
        self.channels: dict[str, dict[str, ChannelInfo]] = {}
        self.loaded = False
        self.windows = Windows(self.settings.window_size)
        self.last_seen: dict[tuple[str, str, str], int] = {}  # (guild, channel, author) -> ms
        self.queue = ProcessingQueue(
            self._process, depth=self.settings.queue_depth, concurrency=self.settings.concurrency
        )
        self.fallbacks = 0  # extractions that failed and wrote the fallback signal
        self.escalations = 0  # extractions sent to the ``complex`` slot first (complexity)
        self.entity_ids: dict[str, str] = {}  # this process's entity id -> the stored one
        self.known: dict[str, tuple[float, list[str]]] = {}  # guild -> (until, entity names)
        from gigi_knowledge.writer.batcher import Batcher
        from gigi_knowledge.writer.caches import Caches

        self.caches = Caches()
        self.notes = Batcher(self)  # light notes and extractions, many to a commit
        self._refresher: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()

    def background(self, work: Any) -> None:
        """Run a store write an observer cannot await (kept until done; ``settle`` waits)."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def settle(self, seconds: float = 30.0) -> bool:
        """Everything queued so far processed and every background write done."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=seconds)
        drained = await self.queue.drain(seconds)
        await self.notes.flush()
        return drained

    async def start(self) -> None:
        await self.reload()
        if self._refresher is None:
            self._refresher = asyncio.get_running_loop().create_task(
                self._refresh(), name="gigi-knowledge-channels"
            )

    async def reload(self) -> None:
        try:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(sa.select(tables.channels))).all()
        except Exception as exc:  # nothing is processed until a reload succeeds
            log.error("knowledge: could not load the channel settings: %s", type(exc).__name__)
            return
        fresh: dict[str, dict[str, ChannelInfo]] = {}
        for row in rows:
            if row.enabled and not row.deleted:
                fresh.setdefault(row.guild_id, {})[row.channel_id] = ChannelInfo(
                    True, row.timezone, context_line(row), row.parent_id
                )
        for guild, chans in self.channels.items():  # disabled elsewhere: drop their windows
            for channel in chans:
                if channel not in fresh.get(guild, {}):
                    self.windows.flush(guild, channel)
        self.channels, self.loaded = fresh, True

    async def _refresh(self) -> None:
        interval = float(os.environ.get("GIGI_KNOWLEDGE_REFRESH_SECONDS", "30"))
        while True:
            await asyncio.sleep(interval)
            await self.reload()

    def channel(self, guild_id: str, channel_id: str) -> ChannelInfo | None:
        return self.channels.get(guild_id, {}).get(channel_id)

    def set_channel(self, guild_id: str, channel_id: str, info: ChannelInfo | None) -> None:
        if info is None:
            self.channels.get(guild_id, {}).pop(channel_id, None)
            self.drop_channel(guild_id, channel_id)
        else:
            self.channels.setdefault(guild_id, {})[channel_id] = info

    def drop_channel(self, guild_id: str, channel_id: str | None = None) -> None:
        """Secured, deleted, disabled: its window and queued messages go now."""
        self.windows.flush(guild_id, channel_id)
        self.queue.discard(guild_id, channel_id)

    async def _process(self, job: Job) -> None:
        from gigi_knowledge.ingest.pipeline import process

        await process(self, job)

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(BaseException):
                await self._refresher
        await self.queue.close()
        await self.notes.flush()  # notes and extractions made are written; windows are not
        self.windows = Windows(self.settings.window_size)


def service_of(kernel: Any) -> KnowledgeService:
    svc = kernel.__dict__.get(ATTRIBUTE)
    if svc is None:
        svc = KnowledgeService(kernel)
        setattr(kernel, ATTRIBUTE, svc)
    return svc  # type: ignore[no-any-return]


async def ready(kernel: Any) -> KnowledgeService:
    svc = service_of(kernel)
    if not svc.loaded:
        await svc.start()
    return svc
