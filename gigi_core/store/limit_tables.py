"""Shared rate limits and turns (revision kernel_0008): keyed hashes, counts, times; no ids."""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gigi_core.store.tables import Base


class RateBucket(Base):
    """Hits of one key in one fixed window; two windows estimate a sliding one."""

    __tablename__ = "gigi_rate_buckets"

    scope: Mapped[str] = mapped_column(String(64), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    window: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # start // length
    hits: Mapped[int] = mapped_column(Integer, default=0)


class Turn(Base):
    """When ``name`` last had its turn (database clock, epoch seconds): spaced passes."""

    __tablename__ = "gigi_turns"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    last_at: Mapped[float] = mapped_column(Float)
