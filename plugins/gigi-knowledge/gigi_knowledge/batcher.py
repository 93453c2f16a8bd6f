"""The pipeline's one writer: light notes and whole extractions are queued in memory and
written many to a transaction, so a busy channel pays one commit per batch, not per message.

A batch is committed ``DELAY`` seconds after its first item (or at ``BATCH`` items). If the
batch's transaction fails, each item is retried alone, so one bad extraction never sinks
the others; an item that still fails is counted and logged (class only), and the caches of
its guild are dropped (they may hold what was never stored). ``flush`` writes everything
queued (shutdown, tests, a reload of the caches, a purge).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables

log = logging.getLogger("gigi_knowledge")
Apply = Callable[[Any], Awaitable[None]]


@dataclass
class Unit:
    """One extraction's writes, applied on a connection the batch owns."""

    guild_id: str
    apply: Apply


class Batcher:
    BATCH = 200
    DELAY = 0.05

    def __init__(self, svc: Any) -> None:
        self.svc = svc
        self.rows: list[dict[str, Any]] = []  # light notes (knowledge_signals rows)
        self.units: list[Unit] = []
        self._task: asyncio.Task[None] | None = None
        self._now = asyncio.Event()  # set by flush: write without waiting for DELAY
        self.failed = 0  # notes and extractions that could not be written
        self.commits = 0

    def __len__(self) -> int:
        return len(self.rows) + len(self.units)

    def add(self, row: dict[str, Any]) -> None:
        """A light note (a ``knowledge_signals`` row)."""
        self.rows.append(row)
        self._wake()

    def add_unit(self, guild_id: str, apply: Apply) -> None:
        """An extraction's writes; units are applied in the order they were added."""
        self.units.append(Unit(guild_id, apply))
        self._wake()

    def _wake(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        if len(self) < self.BATCH and not self._now.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._now.wait(), self.DELAY)
        while self.rows or self.units:
            rows, self.rows = self.rows[: self.BATCH], self.rows[self.BATCH :]
            units, self.units = self.units[: self.BATCH], self.units[self.BATCH :]
            try:
                await self._write(rows, units)
            except Exception:
                await self._one_by_one(rows, units)

    async def _write(self, rows: list[dict[str, Any]], units: list[Unit]) -> None:
        async with self.svc.engine.begin() as conn:
            if rows:
                await conn.execute(sa.insert(tables.signals), rows)
            for unit in units:
                await unit.apply(conn)
        self.commits += 1

    async def _one_by_one(self, rows: list[dict[str, Any]], units: list[Unit]) -> None:
        if rows:
            try:
                await self._write(rows, [])
            except Exception as exc:  # notes are the lightest knowledge: counted, not retried
                self.failed += len(rows)
                log.error("knowledge: %d note(s) not written: %s", len(rows), type(exc).__name__)
        for unit in units:
            try:
                await self._write([], [unit])
            except Exception as exc:
                self.failed += 1
                self.svc.caches.forget(unit.guild_id)
                log.error("knowledge: an extraction was not written: %s", type(exc).__name__)

    async def flush(self) -> None:
        """Everything queued so far is written (or counted as failed) when this returns."""
        self._now.set()
        try:
            while self._task is not None and not self._task.done():
                await asyncio.shield(self._task)
            if self.rows or self.units:  # added while the last task was finishing
                self._wake()
                await self.flush()
        finally:
            self._now.clear()

    def discard(self, guild_id: str) -> None:
        self.rows = [r for r in self.rows if r["guild_id"] != guild_id]
        self.units = [u for u in self.units if u.guild_id != guild_id]
