"""``kernel.limits``: "at most N per window" for a key, and spaced turns ("one pass per T
seconds for a name"), shared by every process on PostgreSQL.

Surfaces use it for the per-member run limit (``GIGI_DISCORD_RUNS_PER_MINUTE``): with
several processes on one database, a member spreading requests over shards still meets one
limit. On PostgreSQL a key's hits are counted in fixed windows and the sliding count is
estimated from the current and previous window (the previous weighted by how much of it
still overlaps the last ``per_seconds``). On SQLite, one process serves the bot, so an exact
in-memory sliding window is kept. Keys are stored only as keyed hashes.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import delete, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from gigi_core.store.limit_tables import RateBucket, Turn

if TYPE_CHECKING:
    from gigi_core.store.db import Database

PRUNE_ONE_IN = 200  # a take() in this many also deletes windows nobody can count any more


class RateLimits:
    def __init__(
        self,
        db: Database,
        hasher: Callable[[bytes], str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.hasher = hasher
        self.clock = clock
        self._local: dict[tuple[str, str], deque[float]] = {}
        self._turn_locks: dict[str, asyncio.Lock] = {}
        self._turns: dict[str, float] = {}

    @property
    def shared(self) -> bool:
        return self.db.dialect == "postgresql"

    async def take(self, scope: str, key: str, limit: int, per_seconds: float = 60.0) -> bool:
        """Count one hit for ``key``; False (the hit is still counted) when over ``limit``.

        ``limit <= 0`` turns the limit off.
        """
        if limit <= 0:
            return True
        if not self.shared:
            return self._take_local(scope, key, limit, per_seconds)
        return await self._take_shared(scope, key, limit, per_seconds)

    def _take_local(self, scope: str, key: str, limit: int, per_seconds: float) -> bool:
        now = self.clock()
        seen = self._local.setdefault((scope, key), deque())
        while seen and now - seen[0] >= per_seconds:
            seen.popleft()
        if len(seen) >= limit:
            return False
        seen.append(now)
        return True

    async def _take_shared(self, scope: str, key: str, limit: int, per_seconds: float) -> bool:
        now = self.clock()
        window = int(now // per_seconds)
        into = (now % per_seconds) / per_seconds
        key_hash = self.hasher(f"{scope}:{key}".encode())
        stmt = pg_insert(RateBucket).values(scope=scope, key_hash=key_hash, window=window, hits=1)
        stmt = stmt.on_conflict_do_update(
            index_elements=["scope", "key_hash", "window"],
            set_={"hits": RateBucket.hits + 1},
        ).returning(RateBucket.hits)
        async with self.db.engine.begin() as conn:
            current = (await conn.execute(stmt)).scalar_one()
            previous = await conn.scalar(
                select(RateBucket.hits).where(
                    RateBucket.scope == scope,
                    RateBucket.key_hash == key_hash,
                    RateBucket.window == window - 1,
                )
            )
            if random.randrange(PRUNE_ONE_IN) == 0:
                await conn.execute(delete(RateBucket).where(RateBucket.window < window - 1))
        estimate = (previous or 0) * (1.0 - into) + current
        return estimate <= limit

    async def wait_turn(self, name: str, every: float) -> float:
        """Return once ``every`` seconds have passed since ``name``'s last turn (then it is
        this caller's), with the time the turn was taken in the clock that spaces them
        (``time.monotonic()`` in one process, the database's epoch seconds across processes).
        Discord allows one gateway IDENTIFY per bucket every 5 seconds for the whole bot,
        whichever process sends it. Each caller returns after its own commit, so two returns
        can be closer than ``every`` by the difference of their commit times."""
        lock = self._turn_locks.setdefault(name, asyncio.Lock())
        async with lock:  # one waiter per name in this process; the database orders the rest
            if self.shared:
                return await self._wait_turn_shared(name, every)
            wait = self._turns.get(name, -math.inf) + every - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            taken = self._turns[name] = time.monotonic()
            return taken

    async def _wait_turn_shared(self, name: str, every: float) -> float:
        now = text("SELECT extract(epoch from clock_timestamp())")
        async with self.db.engine.begin() as conn:  # the lock is held until the turn is taken
            await conn.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:n))"), {"n": f"gigi.turn:{name}"}
            )
            last = await conn.scalar(select(Turn.last_at).where(Turn.name == name))
            if last is not None:
                wait = float(last) + every - float(await conn.scalar(now))
                if wait > 0:
                    await asyncio.sleep(wait)
            taken = float(await conn.scalar(now))
            stmt = pg_insert(Turn).values(name=name, last_at=taken)
            await conn.execute(
                stmt.on_conflict_do_update(index_elements=["name"], set_={"last_at": taken})
            )
        return taken
