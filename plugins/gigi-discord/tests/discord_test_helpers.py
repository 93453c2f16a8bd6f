"""Scan every column of every table for a string (a leaked secret must be nowhere)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, text


async def leaks(kernel: Any, needle: str) -> list[tuple[str, str]]:
    """(table, column) pairs whose value contains ``needle``; empty means nothing leaked."""

    def names(conn: Any) -> dict[str, list[str]]:
        insp = inspect(conn)
        return {t: [c["name"] for c in insp.get_columns(t)] for t in insp.get_table_names()}

    found: list[tuple[str, str]] = []
    async with kernel.db.engine.connect() as conn:
        for table, columns in (await conn.run_sync(names)).items():
            for row in await conn.execute(text(f'SELECT * FROM "{table}"')):
                for column, value in zip(columns, row, strict=True):
                    raw = bytes(value) if isinstance(value, bytes | memoryview) else None
                    hit = needle.encode() in raw if raw is not None else needle in str(value)
                    if value is not None and hit:
                        found.append((table, column))
    return found
