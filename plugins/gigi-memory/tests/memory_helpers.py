"""Helpers for gigi-memory's tests: events, calls and a look at what is stored."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import gigi_memory
import sqlalchemy as sa

from gigi_core import Actor
from gigi_core.events import MessageCreated

ADMIN = Actor(id="admin", is_admin=True)
MEMBER = Actor(id="member")
_ids = itertools.count(1000)


def message(text: str = "hello", **fields: Any) -> MessageCreated:
    values: dict[str, Any] = {
        "guild_id": "g1",
        "message_id": str(next(_ids)),
        "channel_id": "c1",
        "author_id": "u1",
        "created_at": datetime.now(UTC),
        "text": text,
    }
    values.update(fields)
    return MessageCreated(**values)


def ago(**delta: float) -> datetime:
    return datetime.now(UTC) - timedelta(**delta)


async def settle(kernel: Any) -> None:
    """Observers ran and the writer committed everything they queued."""
    await kernel.events.drain()
    assert await gigi_memory.flush(kernel, 30)


async def publish(kernel: Any, *events: Any) -> None:
    for event in events:
        await kernel.publish(event)
    await settle(kernel)


async def call(
    kernel: Any,
    action: str,
    actor: Actor = ADMIN,
    channel_id: str | None = "c1",
    guild_id: str = "g1",
    **args: Any,
) -> Any:
    outcome = await kernel.call_tool(
        f"memory.{action}", args, actor=actor, guild_id=guild_id, channel_id=channel_id
    )
    return outcome.result


async def enable(kernel: Any, channel: str = "c1", days: int | None = 30) -> Any:
    args = {"channel": channel} if days is None else {"channel": channel, "retention_days": days}
    return await call(kernel, "enable", **args)


async def count(kernel: Any, **args: Any) -> int:
    return (await call(kernel, "count", **args))["count"]


async def rows(kernel: Any, sql: str, **params: Any) -> list[Any]:
    async with kernel.db.engine.connect() as conn:
        return list((await conn.execute(sa.text(sql), params)).all())


async def dump_text(kernel: Any) -> str:
    """Every text and blob column of every memory table (FTS5 shadow tables too), as one
    string: a canary absent from it is stored nowhere in memory's tables."""
    parts: list[str] = []
    async with kernel.db.engine.connect() as conn:
        if kernel.db.dialect == "sqlite":
            names = [
                r[0]
                for r in await conn.execute(
                    sa.text(
                        "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'memory%'"
                    )
                )
            ]
        else:
            names = [
                r[0]
                for r in await conn.execute(
                    sa.text(
                        "SELECT tablename FROM pg_tables WHERE schemaname='public' "
                        "AND tablename LIKE 'memory%'"
                    )
                )
            ]
        for name in names:
            for row in await conn.execute(sa.text(f'SELECT * FROM "{name}"')):
                for value in row:
                    if isinstance(value, bytes | bytearray | memoryview):
                        parts.append(bytes(value).decode("latin-1"))
                    elif value is not None:
                        parts.append(str(value))
    return "\n".join(parts)


async def embed_all(kernel: Any) -> None:
    """Everything written is embedded: the writer committed and the embedding jobs ran
    (retries included: a retry due "now" may still be a few ms ahead of the clock)."""
    await settle(kernel)
    for _ in range(100):
        await kernel.jobs.run_until_idle()
        jobs = await kernel.jobs.list(name="memory.embed")
        if not any(j.status in ("queued", "running") for j in jobs):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(
        f"the embedding jobs did not finish: {[(j.key, j.status, j.attempts, j.run_at) for j in jobs]}"
    )


async def segments_of(kernel: Any, *message_ids: str) -> list[Any]:
    """The segment rows of these messages (every segment of the guild when none is named)."""
    sql = (
        "SELECT s.*, m.message_id FROM memory_segments s "
        "LEFT JOIN memory_messages m ON m.id = s.message_row_id"
    )
    found = await rows(kernel, sql)
    # An orphan (a segment whose message is gone) never should exist: it always counts.
    return [r for r in found if not message_ids or r.message_id in (None, *message_ids)]
