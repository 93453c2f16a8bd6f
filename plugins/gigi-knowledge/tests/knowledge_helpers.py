"""Helpers for knowledge's tests: messages, command calls and a look at what is stored."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import gigi_knowledge
import sqlalchemy as sa

from gigi_core import Actor
from gigi_core.events import MessageCreated

ADMIN = Actor(id="admin", is_admin=True)
ALICE = Actor(id="u1")
BOB = Actor(id="u2")
_ids = itertools.count(5000)


def message(text: str, **fields: Any) -> MessageCreated:
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


async def settle(kernel: Any) -> None:
    await kernel.events.drain()
    assert await gigi_knowledge.flush(kernel, 30)


async def publish(kernel: Any, *events: Any) -> None:
    for event in events:
        await kernel.publish(event)
        await settle(kernel)  # one at a time: scripted replies meet their message


async def call(
    kernel: Any,
    action: str,
    actor: Actor = ADMIN,
    channel_id: str | None = "c1",
    visible: Any = None,
    **args: Any,
) -> Any:
    outcome = await kernel.call_tool(
        f"knowledge.{action}",
        args,
        actor=actor,
        guild_id="g1",
        channel_id=channel_id,
        visible_channels=visible,
    )
    return outcome.result


async def enable(kernel: Any, channel: str = "c1", **args: Any) -> Any:
    return await call(kernel, "enable", channel=channel, **args)


async def rows(kernel: Any, table: str, where: str = "1=1", **params: Any) -> list[Any]:
    async with kernel.db.engine.connect() as conn:
        return list(
            (await conn.execute(sa.text(f"SELECT * FROM {table} WHERE {where}"), params)).all()
        )


async def all_tables_text(kernel: Any) -> str:
    """Every value of every table of the store (kernel's and plugins'), as one string."""
    parts: list[str] = []
    async with kernel.db.engine.connect() as conn:
        if kernel.db.dialect == "sqlite":
            sql = "SELECT name FROM sqlite_master WHERE type='table'"
        else:
            sql = "SELECT tablename FROM pg_tables WHERE schemaname='public'"
        names = [r[0] for r in await conn.execute(sa.text(sql))]
        for name in names:
            for row in await conn.execute(sa.text(f'SELECT * FROM "{name}"')):
                for value in row:
                    if isinstance(value, bytes | bytearray | memoryview):
                        parts.append(bytes(value).decode("latin-1"))
                    elif value is not None:
                        parts.append(str(value))
    return "\n".join(parts)


class JobCtx:
    """What a job handler is given, for calling one directly in a test."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.cancelled = False

    async def progress(self, done: int, total: int | None = None, note: str | None = None) -> None:
        return None
