"""PostgreSQL away while messages keep arriving: publishing never waits for it, the writer
keeps the queue and retries (lag, retries and the error class in its stats), and when the
server is back everything is stored once."""

from __future__ import annotations

import asyncio
import time

import gigi_memory
from gigi_memory.ingest import writer as memory_writer
from gigi_memory.service import service_of
from memory_helpers import call, count, enable, message, rows, settle

from gigi_core.testing import backends, open_test_kernel
from gigi_core.testing.backends import fresh_postgres_database, stop_postgres

own_server = backends.own_postgres_server  # a server this test may stop


async def test_the_database_away_blocks_nothing_and_loses_nothing(
    own_server, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(memory_writer, "RETRY_MAX_SECONDS", 0.4)  # 30 s in production
    _, url = fresh_postgres_database(own_server.get_uri())
    async with open_test_kernel(tmp_path, plugins=["memory"], database_url=url) as kernel:
        await kernel.enable_plugin("g1", "memory")
        await enable(kernel, "c1")
        for i in range(20):
            await kernel.publish(message(f"before outage {i}"))
        await settle(kernel)
        writer = service_of(kernel).writer
        await asyncio.to_thread(stop_postgres, own_server)
        slowest = 0.0
        for i in range(200):  # the surface goes on: ~2 s of messages with no database
            started = time.perf_counter()
            await kernel.publish(message(f"during outage {i}"))
            slowest = max(slowest, time.perf_counter() - started)
            await asyncio.sleep(0.01)
        await kernel.events.drain()
        assert slowest < 0.05  # publish returns at once: it never awaits the database
        assert len(writer.queue) + len(writer._inflight) > 0
        assert writer.stats.retries >= 2 and writer.stats.last_error is not None
        assert writer.lag_seconds > 1.0
        retries = writer.stats.retries
        await asyncio.sleep(1.0)
        assert writer.stats.retries > retries  # still retrying: it never gives up
        await asyncio.to_thread(own_server.ensure_postgres_running)
        assert await gigi_memory.flush(kernel, 20)
        assert writer.lag_seconds == 0.0 and writer.stats.failed == 0
        shown = (await call(kernel, "status"))["writer"]  # /memory status says it happened
        assert shown["queued"] == 0 and shown["retries"] >= retries and shown["last_error"]
        assert await count(kernel, text="outage") == 220
        [(total, distinct)] = await rows(
            kernel, "SELECT COUNT(*), COUNT(DISTINCT message_id) FROM memory_messages"
        )
        assert total == distinct == 220
