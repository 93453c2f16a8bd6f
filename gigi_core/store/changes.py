"""Change notices between processes on one PostgreSQL: LISTEN/NOTIFY on ``gigi_changes``.

Caches (policy facts, the event router's guild facts) are cleared at once by changes made
through their own process; this tells the other processes (the bot while an admin runs
``gigi channel secure`` or ``gigi grants add``) so they do not wait for the cache TTL.
A notice carries a topic and ids only, never text. On SQLite there is no other process to
tell (``gigi`` commands there run beside the bot and the TTLs apply).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gigi_core.events import ChannelSecured

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.store.db import Database

log = logging.getLogger(__name__)

CHANNEL = "gigi_changes"
RESYNC = "*"  # given to every subscriber after the listener (re)connects: notices may be lost
MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class Change:
    """What changed, by topic (``facts``, ``channel``, ``channel.secured``, ...) and ids."""

    topic: str
    guild_id: str | None = None
    data: dict[str, str | None] = field(default_factory=dict)


class ChangeFeed:
    """``tell`` other processes of a change; ``subscribe`` to theirs (after ``listen``)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.origin = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._subscribers: dict[str, list[Callable[[Change], None]]] = {}
        self._sending: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()  # set while the LISTEN connection is up

    @property
    def shared(self) -> bool:
        return self.db.dialect == "postgresql"

    def subscribe(self, topic: str, fn: Callable[[Change], None]) -> None:
        """``fn(change)`` for notices of ``topic`` from other processes, and for ``RESYNC``."""
        self._subscribers.setdefault(topic, []).append(fn)

    def tell(self, change: Change) -> None:
        """Send after the change committed; returns at once (``close`` waits for the send)."""
        if not self.shared:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._send(change))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, change: Change) -> None:
        from sqlalchemy import text

        payload = json.dumps(
            {"o": self.origin, "t": change.topic, "g": change.guild_id, "d": change.data}
        )
        try:
            async with self.db.engine.begin() as conn:
                await conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": CHANNEL, "p": payload})
        except Exception as exc:  # the others fall back to their cache TTL
            log.warning(
                "could not notify other processes of a %s change: %s",
                change.topic,
                type(exc).__name__,
            )

    async def listen(self) -> None:
        """Start receiving other processes' notices (long-running processes only)."""
        if self.shared and self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        import psycopg

        from gigi_core.store.db import libpq_dsn

        backoff = 0.5
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    libpq_dsn(self.db.url), autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    backoff = 0.5
                    self._dispatch(Change(RESYNC))  # anything missed while away
                    async for notice in conn.notifies():
                        self._receive(notice.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning(
                    "change listener lost its connection (%s); retrying in %.1fs",
                    type(exc).__name__,
                    backoff,
                )
            self.listening.clear()
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF, backoff * 2)

    def _receive(self, payload: str) -> None:
        try:
            raw = json.loads(payload)
            if raw.get("o") == self.origin:
                return
            change = Change(str(raw["t"]), raw.get("g"), dict(raw.get("d") or {}))
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("ignored a malformed change notice")
            return
        self._dispatch(change)

    def _dispatch(self, change: Change) -> None:
        topics = self._subscribers if change.topic == RESYNC else {change.topic: []}
        for topic in topics:
            for fn in self._subscribers.get(topic, []):
                try:
                    fn(change)
                except Exception:
                    log.exception("change subscriber for %s failed", topic)

    async def close(self) -> None:
        if self._sending:
            await asyncio.wait(list(self._sending), timeout=5)
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        self.listening.clear()


def clear_caches_on_changes(kernel: Kernel) -> None:
    """Other processes' changes clear this kernel's caches as its own changes do."""

    def facts(change: Change) -> None:
        kernel.views.clear()
        kernel.config_secrets.retire_all()
        kernel.events.invalidate()

    def secured(change: Change) -> None:
        channel = change.data.get("channel")
        if change.guild_id and channel:  # observers here drop their windows too
            kernel.events.publish_nowait(
                ChannelSecured(
                    guild_id=change.guild_id, channel_id=channel, by=change.data.get("by")
                )
            )

    def llm(change: Change) -> None:
        service = kernel.__dict__.get("llm")  # never built here: nothing cached to forget
        if service is None:
            return
        credential = change.data.get("credential")
        if credential:
            service.cache.retire(credential)  # a revoked or rotated key is dropped at once
        else:
            service.cache.clear()

    kernel.changes.subscribe("llm", llm)
    kernel.changes.subscribe("facts", facts)
    kernel.changes.subscribe("channel", lambda c: kernel.events.invalidate(c.guild_id))
    kernel.changes.subscribe("channel.secured", secured)
