"""Helpers for the kernel.llm tests: a kernel with gigi-openai, no-sleep retries, table scans."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, text

from gigi_core.kernel import Kernel
from gigi_core.llm import LlmHttpClient, RetryPolicy
from gigi_core.llm.usage import UsageRecord
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import RecordingSleep

# Distinctive enough that a hit anywhere is a real leak, long enough to survive scrubbing.
GUILD_KEY = "sk-guild-CANARY-7f3a9c1e5b"
TENANT_KEY = "sk-tenant-CANARY-2d8e4b6a0c"
USER_KEY = "sk-user-CANARY-9b1c3e5f7a"


def guild_usage(guild: str, tokens: int | None = 1, **fields: Any) -> UsageRecord:
    """A successful chat call billed to ``guild``; ``fields`` override any other column."""
    record: dict[str, Any] = {
        "request_id": f"r-{guild}-{tokens}",
        "provider": "openai",
        "model": "m1",
        "purpose": "chat",
        "billing_owner_type": "guild",
        "billing_owner_id": guild,
        "status": "ok",
        "guild_id": guild,
        "input_tokens": tokens,
        "output_tokens": 1,
    }
    return UsageRecord(**(record | fields))


@asynccontextmanager
async def llm_kernel(tmp_path: Path, database_url: str) -> AsyncIterator[Kernel]:
    """A kernel with the real gigi-openai providers, whose retry waits are recorded, not slept."""
    async with open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as k:
        for provider in k.registry.providers.values():
            provider._http = LlmHttpClient(
                retry=RetryPolicy(jitter=lambda: 1.0), sleep=RecordingSleep()
            )
        yield k


async def all_values(kernel: Kernel) -> list[tuple[str, str, Any]]:
    """Every (table, column, value) in the database, including tables no model declares."""

    def names(conn: Any) -> dict[str, list[str]]:
        insp = inspect(conn)
        return {t: [c["name"] for c in insp.get_columns(t)] for t in insp.get_table_names()}

    out: list[tuple[str, str, Any]] = []
    async with kernel.db.engine.connect() as conn:
        tables = await conn.run_sync(names)
        for table, columns in tables.items():
            rows = await conn.execute(text(f'SELECT * FROM "{table}"'))
            for row in rows:
                out.extend((table, c, v) for c, v in zip(columns, row, strict=True))
    return out


def contains(value: Any, needle: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bytes | bytearray | memoryview):
        return needle.encode() in bytes(value)
    return needle in str(value)


async def leaks(kernel: Kernel, *needles: str) -> list[tuple[str, str]]:
    """(table, column) pairs holding any of ``needles``; empty means nothing leaked."""
    return [(t, c) for t, c, v in await all_values(kernel) if any(contains(v, n) for n in needles)]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
