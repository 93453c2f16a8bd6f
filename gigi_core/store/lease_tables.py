"""Gateway shard leases (revision kernel_0011): which process serves which shard, until when."""

from __future__ import annotations

from sqlalchemy import Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base


class ShardLease(Base):
    """One shard of a pool (a bot's gateway) held by one process; expiries on the db clock."""

    __tablename__ = "gigi_shard_leases"

    pool: Mapped[str] = mapped_column(String(64), primary_key=True)
    shard_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    shard_count: Mapped[int] = mapped_column(Integer)
    owner: Mapped[str] = mapped_column(String(64))
    lease_until: Mapped[float] = mapped_column(Float)
    claimed_at: Mapped[float] = mapped_column(Float)


class ShardMember(Base):
    """A process taking part in a pool (holding shards or standing by): the live members
    decide each one's fair share of the shards."""

    __tablename__ = "gigi_shard_members"

    pool: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(64), primary_key=True)
    lease_until: Mapped[float] = mapped_column(Float)
