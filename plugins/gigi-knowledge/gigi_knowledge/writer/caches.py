"""Short-lived, per-process caches of what every extraction would otherwise re-read: the
guild's entities with their name vectors (dedup) and a channel's recent active decision
vectors (contradiction candidates).

Written through by this process's extractions (under the guild lock), dropped for a guild
on any failed write, supersede, member deletion or purge, and reloaded after ``TTL``
seconds so another process's writes are seen. Ids and synthesised text only, as stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from gigi_knowledge import tables, vectors

TTL = 60.0
E, V, D = tables.entities, tables.embeddings, tables.decisions


@dataclass
class KnownEntity:
    id: str
    name: str
    aliases: list[str]
    entity_type: str
    vec: np.ndarray | None = None
    model: str | None = None


@dataclass
class KnownDecision:
    id: str
    summary: str
    decided_ms: int
    vec: np.ndarray
    model: str


@dataclass
class Caches:
    entities: dict[str, tuple[float, dict[str, list[KnownEntity]]]] = field(default_factory=dict)
    decisions: dict[tuple[str, str], tuple[float, list[KnownDecision]]] = field(
        default_factory=dict
    )

    def forget(self, guild_id: str | None = None) -> None:
        if guild_id is None:
            self.entities.clear()
            self.decisions.clear()
            return
        self.entities.pop(guild_id, None)
        for key in [k for k in self.decisions if k[0] == guild_id]:
            del self.decisions[key]

    def peek_entities(self, guild_id: str) -> dict[str, list[KnownEntity]] | None:
        """The guild's cached entities if still fresh, else None (no store access)."""
        hit = self.entities.get(guild_id)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else None

    async def guild_entities(self, conn: Any, guild_id: str) -> dict[str, list[KnownEntity]]:
        hit = self.entities.get(guild_id)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        rows = (
            await conn.execute(
                sa.select(E.c.id, E.c.name, E.c.aliases, E.c.entity_type).where(
                    E.c.guild_id == guild_id, E.c.deleted.is_(False)
                )
            )
        ).all()
        vecs = {
            r.source_id: (vectors.decode(r.vector), r.model)
            for r in await conn.execute(
                sa.select(V.c.source_id, V.c.vector, V.c.model).where(
                    V.c.guild_id == guild_id, V.c.source_type == "entity"
                )
            )
        }
        by_type: dict[str, list[KnownEntity]] = {}
        for r in rows:
            vec, model = vecs.get(r.id, (None, None))
            by_type.setdefault(r.entity_type, []).append(
                KnownEntity(r.id, r.name, list(r.aliases or []), r.entity_type, vec, model)
            )
        self.entities[guild_id] = (time.monotonic() + TTL, by_type)
        return by_type

    def has_decisions(self, guild_id: str, channel_id: str) -> bool:
        hit = self.decisions.get((guild_id, channel_id))
        return hit is not None and hit[0] > time.monotonic()

    async def channel_decisions(
        self, conn: Any, guild_id: str, channel_id: str, since_ms: int
    ) -> list[KnownDecision]:
        key = (guild_id, channel_id)
        hit = self.decisions.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return [d for d in hit[1] if d.decided_ms >= since_ms]
        rows = (
            await conn.execute(
                sa.select(V.c.source_id, V.c.vector, V.c.model, D.c.summary, D.c.decided_ms)
                .join(D, D.c.id == V.c.source_id)
                .where(
                    V.c.guild_id == guild_id,
                    V.c.channel_id == channel_id,
                    V.c.source_type == "decision",
                    D.c.status == "active",
                    D.c.decided_ms >= since_ms,
                )
            )
        ).all()
        found = [
            KnownDecision(r.source_id, r.summary, r.decided_ms, vectors.decode(r.vector), r.model)
            for r in rows
        ]
        self.decisions[key] = (time.monotonic() + TTL, found)
        return found

    def add_decision(self, guild_id: str, channel_id: str, decision: KnownDecision) -> None:
        hit = self.decisions.get((guild_id, channel_id))
        if hit is not None:
            hit[1].append(decision)
