"""Adding and reading the per-plugin event delivery counters (``observer_stats``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from gigi_core.store.channel_tables import ObserverStats
from gigi_core.store.db import Database
from gigi_core.store.tables import utcnow

COUNTERS = ("delivered", "dropped", "failed", "timed_out")


async def add_counts(db: Database, pending: dict[str, dict[str, int]]) -> None:
    """Add deltas per plugin in one transaction (rows are created on first use)."""
    async with db.session() as s:
        for plugin, counts in pending.items():
            row = await s.get(ObserverStats, plugin, with_for_update=True)
            if row is None:
                row = ObserverStats(plugin=plugin, **dict.fromkeys(COUNTERS, 0))
                s.add(row)
            for counter in COUNTERS:
                setattr(row, counter, (getattr(row, counter) or 0) + counts.get(counter, 0))
            row.updated_at = utcnow()


async def read_counts(db: Database) -> dict[str, dict[str, Any]]:
    async with db.session() as s:
        rows = (await s.scalars(select(ObserverStats))).all()
    return {
        r.plugin: {c: getattr(r, c) for c in COUNTERS} | {"updated_at": r.updated_at.isoformat()}
        for r in rows
    }
