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
from gigi_knowledge.writer import dedup

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
        self.seen: dict[tuple[str, str, str], tuple[str, int]] = {}  # last message per member
        self._task: asyncio.Task[None] | None = None
        self._now = asyncio.Event()  # set by flush: write without waiting for DELAY
        self.failed = 0  # notes and extractions that could not be written
        self.commits = 0

    def __len__(self) -> int:
        return len(self.rows) + len(self.units) + len(self.seen)

    def saw(self, guild_id: str, channel_id: str, user_id: str, message_id: str, ms: int) -> None:
        """A member's latest message in a channel (kept if newer than what is queued)."""
        key = (guild_id, channel_id, user_id)
        old = self.seen.get(key)
        if old is None or old[1] <= ms:
            self.seen[key] = (message_id, ms)
        self._wake()

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
        while self.rows or self.units or self.seen:
            rows, self.rows = self.rows[: self.BATCH], self.rows[self.BATCH :]
            units, self.units = self.units[: self.BATCH], self.units[self.BATCH :]
            seen, self.seen = self.seen, {}
            try:
                await self._write(rows, units, seen)
            except Exception:
                await self._one_by_one(rows, units, seen)

    async def _write(
        self,
        rows: list[dict[str, Any]],
        units: list[Unit],
        seen: dict[tuple[str, str, str], tuple[str, int]] | None = None,
    ) -> None:
        async with self.svc.engine.begin() as conn:
            if units:  # first: entity dedup across processes is decided under this lock
                await dedup.lock_guilds(conn, self.svc.dialect, (u.guild_id for u in units))
            if rows:
                await conn.execute(sa.insert(tables.signals), rows)
            if seen:
                await conn.execute(_seen_upsert(self.svc.dialect), _seen_rows(seen))
            for unit in units:
                await unit.apply(conn)
        self.commits += 1

    async def _one_by_one(
        self,
        rows: list[dict[str, Any]],
        units: list[Unit],
        seen: dict[tuple[str, str, str], tuple[str, int]],
    ) -> None:
        if seen:
            try:
                await self._write([], [], seen)
            except Exception as exc:  # catch-me-up falls back to 24 h: logged, not retried
                log.error("knowledge: last-seen times not written: %s", type(exc).__name__)
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
        self.seen = {k: v for k, v in self.seen.items() if k[0] != guild_id}

    def forget_member(self, user_id: str, guild_id: str | None) -> None:
        """A member's erasure: their last-seen times and the light notes naming them go;
        queued extractions are written by the next flush and anonymised with the rest."""
        self.rows = [
            r
            for r in self.rows
            if not (user_id in (r.get("participants") or []) and guild_id in (None, r["guild_id"]))
        ]
        self.seen = {
            k: v
            for k, v in self.seen.items()
            if not (k[2] == user_id and (guild_id is None or k[0] == guild_id))
        }


def _seen_rows(seen: dict[tuple[str, str, str], tuple[str, int]]) -> list[dict[str, Any]]:
    return [
        {"guild_id": g, "channel_id": c, "user_id": u, "message_id": m, "seen_ms": ms}
        for (g, c, u), (m, ms) in seen.items()
    ]


def _seen_upsert(dialect: str) -> Any:
    """Insert or move a member's last-seen forward (never back: an older message arriving
    late leaves the newer time)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    t = tables.last_seen
    stmt = insert(t)
    return stmt.on_conflict_do_update(
        index_elements=["guild_id", "channel_id", "user_id"],
        set_={"message_id": stmt.excluded.message_id, "seen_ms": stmt.excluded.seen_ms},
        where=t.c.seen_ms <= stmt.excluded.seen_ms,
    )
