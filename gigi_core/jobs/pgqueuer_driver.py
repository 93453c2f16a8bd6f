"""Adapters that let pgqueuer run on psycopg the way Gigi needs.

pgqueuer's own psycopg driver shares one connection between LISTEN and queries, and its
listener holds that connection for up to a second at a time: measured here, a job name
with a concurrency cap then drained about 10 jobs/s. ``WorkerDriver`` gives the listener
its own connection. ``TransactionDriver`` runs pgqueuer's statements inside the
SQLAlchemy transaction that writes the job's row, so a job and its queue entry are
committed (or rolled back) together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from pgqueuer.core.tm import TaskManager

log = logging.getLogger("gigi_core.jobs")

Callback = Any  # pgqueuer's NotifyCallback: payload -> None


class TransactionDriver:
    """Queries only, on a connection that is inside a transaction (no LISTEN here)."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def fetch(self, query: str, *args: object) -> list[dict[str, object]]:
        from psycopg import AsyncRawCursor
        from psycopg.rows import dict_row

        cursor = AsyncRawCursor(self._connection, row_factory=dict_row)
        await cursor.execute(query, args or None)
        return await cursor.fetchall()

    async def execute(self, query: str, *args: object) -> str:
        from psycopg import AsyncRawCursor

        cursor = AsyncRawCursor(self._connection)
        await cursor.execute(query, args or None)
        return cursor.statusmessage or ""

    async def notify(self, channel: str, payload: str) -> None:
        await self.execute("SELECT pg_notify($1, $2)", channel, payload)


class WorkerDriver(TransactionDriver):
    """pgqueuer's ``Driver`` over two autocommit connections: queries, and LISTEN."""

    def __init__(self, connection: Any, listen_connection: Any) -> None:
        super().__init__(connection)
        self._listen = listen_connection
        self._shutdown = asyncio.Event()
        self._tm = TaskManager()
        self._listeners: dict[str, list[Callback]] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._entered = 0

    @classmethod
    async def connect(cls, dsn: str) -> WorkerDriver:
        import psycopg

        query = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        try:
            listen = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        except BaseException:
            await query.close()
            raise
        return cls(query, listen)

    @property
    def shutdown(self) -> asyncio.Event:
        return self._shutdown

    @property
    def tm(self) -> TaskManager:
        return self._tm

    async def add_listener(self, channel: str, callback: Callback) -> None:
        from psycopg import sql

        if channel not in self._listeners:
            await self._listen.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self._listeners[channel] = []
        self._listeners[channel].append(callback)
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch(), name="gigi-jobs-listen")

    async def remove_listener(self, channel: str, callback: Callback) -> None:
        callbacks = self._listeners.get(channel, [])
        if callback in callbacks:
            callbacks.remove(callback)

    async def _watch(self) -> None:
        async for note in self._listen.notifies():
            for callback in list(self._listeners.get(note.channel, [])):
                try:
                    callback(note.payload)
                except Exception as exc:
                    log.warning("jobs: a queue notification handler raised %s", type(exc).__name__)

    async def __aenter__(self) -> WorkerDriver:
        self._entered += 1
        return self

    async def __aexit__(self, *_: object) -> None:
        self._entered -= 1  # several queue managers share this driver; the last one stops it
        if self._entered == 0:
            self._shutdown.set()

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
            self._watcher = None
        await self._tm.gather_tasks()
        for connection in (self._connection, self._listen):
            with contextlib.suppress(Exception):
                await connection.close()
