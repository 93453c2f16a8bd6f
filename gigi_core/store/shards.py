"""Shard leases: identical processes share a gateway's shards through the database.

Each process is a member of a pool (``discord``) and renews its membership and its
shards' leases at every ``beat`` (a third of the lease). A member holds at most its fair
share, ``ceil(shard_count / live members)``, and claims free or expired shards up to it:
K processes started together each get a share; one started later stands by with none
and takes over the shards of a process that died once their leases expire. A process
whose lease was taken (it froze past its expiry) finds the shard ``lost`` at its next
beat and must stop serving it. Expiries are on the database's clock.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from gigi_core.store.lease_tables import ShardLease, ShardMember
from gigi_core.store.leases import db_epoch, lease_seconds, new_owner

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from gigi_core.store.db import Database

LEASE_VARIABLE = "GIGI_SHARD_LEASE_SECONDS"
DEFAULT_LEASE = 30.0


@dataclass(frozen=True)
class ShardBeat:
    """What one beat found: the shards held now, those gained and lost since the last."""

    held: tuple[int, ...]
    gained: tuple[int, ...]
    lost: tuple[int, ...]
    members: int


class ShardLeases:
    def __init__(
        self,
        db: Database,
        shard_count: int,
        *,
        pool: str = "discord",
        owner: str | None = None,
        lease: float | None = None,
    ) -> None:
        if shard_count < 1:
            raise ValueError("shard_count must be at least 1")
        self.db = db
        self.shard_count = shard_count
        self.pool = pool
        self.owner = owner or new_owner()
        self.lease = lease or lease_seconds(LEASE_VARIABLE, DEFAULT_LEASE)
        self.held: frozenset[int] = frozenset()

    @property
    def every(self) -> float:
        """How often to beat: three beats per lease, so one late beat loses nothing."""
        return self.lease / 3

    async def join(self, settle: float | None = None) -> ShardBeat:
        """Become a member, wait for peers started at the same time to do so too, then claim
        a fair share (maybe none: the process then stands by)."""
        await self.beat(claim=False)
        await asyncio.sleep(self.every if settle is None else settle)
        return await self.beat()

    async def beat(self, *, claim: bool = True) -> ShardBeat:
        """Renew membership and held leases; claim free shards up to the fair share."""
        async with self.db.engine.begin() as conn:
            # Beats of one pool take turns: two claimants must not both see a shard free.
            # (SQLite: the membership write below takes the database's write lock first.)
            if self.db.dialect == "postgresql":
                await conn.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext(:k))"),
                    {"k": f"gigi.shards:{self.pool}"},
                )
            now = float((await conn.execute(select(db_epoch()))).scalar_one())
            until = now + self.lease
            await self._upsert(
                conn,
                ShardMember,
                {"pool": self.pool, "owner": self.owner, "lease_until": until},
                ["pool", "owner"],
                {"lease_until": until},
            )
            renewed = await conn.execute(
                update(ShardLease)
                .where(
                    ShardLease.pool == self.pool,
                    ShardLease.owner == self.owner,
                    ShardLease.shard_count == self.shard_count,
                    ShardLease.lease_until >= now,  # an expired lease may be another's now
                )
                .values(lease_until=until)
                .returning(ShardLease.shard_id)
            )
            held = {int(r[0]) for r in renewed}
            members = int(
                await conn.scalar(
                    select(func.count()).where(
                        ShardMember.pool == self.pool, ShardMember.lease_until >= now
                    )
                )
                or 1
            )
            share = math.ceil(self.shard_count / max(1, members))
            if claim and len(held) < share:
                held |= await self._claim(conn, now, until, held, share - len(held))
        previous, self.held = self.held, frozenset(held)
        return ShardBeat(
            held=tuple(sorted(held)),
            gained=tuple(sorted(self.held - previous)),
            lost=tuple(sorted(previous - self.held)),
            members=members,
        )

    async def _claim(
        self, conn: AsyncConnection, now: float, until: float, held: set[int], wanted: int
    ) -> set[int]:
        rows = await conn.execute(
            select(ShardLease.shard_id, ShardLease.lease_until).where(ShardLease.pool == self.pool)
        )
        busy = {int(sid) for sid, lease_until in rows if float(lease_until) >= now}
        taken: set[int] = set()
        for shard_id in range(self.shard_count):
            if len(taken) >= wanted:
                break
            if shard_id in busy or shard_id in held:
                continue
            values = {
                "pool": self.pool,
                "shard_id": shard_id,
                "shard_count": self.shard_count,
                "owner": self.owner,
                "lease_until": until,
                "claimed_at": now,
            }
            # Conditional on the old lease having expired: two claimants, one winner.
            if await self._upsert(
                conn,
                ShardLease,
                values,
                ["pool", "shard_id"],
                {k: values[k] for k in ("shard_count", "owner", "lease_until", "claimed_at")},
                where=ShardLease.lease_until < now,
            ):
                taken.add(shard_id)
        return taken

    async def _upsert(
        self,
        conn: AsyncConnection,
        table: Any,
        values: dict[str, Any],
        keys: list[str],
        changes: dict[str, Any],
        where: Any = None,
    ) -> bool:
        insert = pg_insert if self.db.dialect == "postgresql" else sqlite_insert
        stmt = insert(table).values(**values)
        stmt = stmt.on_conflict_do_update(index_elements=keys, set_=changes, where=where)
        return bool((await conn.execute(stmt)).rowcount)

    async def pool_count(self) -> int | None:
        """The shard count live members of the pool use (a new process must agree)."""
        async with self.db.engine.begin() as conn:
            now = db_epoch()
            return await conn.scalar(
                select(func.max(ShardLease.shard_count)).where(
                    ShardLease.pool == self.pool, ShardLease.lease_until >= now
                )
            )

    async def release(self) -> None:
        """Leave the pool: hand every shard back at once (a clean stop, not a crash)."""
        async with self.db.engine.begin() as conn:
            await conn.execute(
                delete(ShardLease).where(
                    ShardLease.pool == self.pool, ShardLease.owner == self.owner
                )
            )
            await conn.execute(
                delete(ShardMember).where(
                    ShardMember.pool == self.pool, ShardMember.owner == self.owner
                )
            )
        self.held = frozenset()

    async def table(self) -> list[dict[str, Any]]:
        """Every lease of the pool with seconds left (negative: expired), for operators."""
        async with self.db.engine.begin() as conn:
            rows = await conn.execute(
                select(
                    ShardLease.shard_id,
                    ShardLease.shard_count,
                    ShardLease.owner,
                    ShardLease.lease_until - db_epoch(),
                )
                .where(ShardLease.pool == self.pool)
                .order_by(ShardLease.shard_id)
            )
            return [
                {"shard_id": s, "shard_count": c, "owner": o, "seconds_left": round(float(t), 1)}
                for s, c, o, t in rows
            ]
