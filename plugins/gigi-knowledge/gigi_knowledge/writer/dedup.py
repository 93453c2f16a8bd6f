"""Entity dedup decided by the store, so two processes extracting one entity store one row.

The per-process cache (``caches``) plans most merges cheaply; an entity the cache calls new
is checked again here, inside the batch's transaction and under the guild's entity lock
(``lock_guilds``: a PostgreSQL advisory lock per guild, taken in sorted order at the start
of the transaction; on SQLite the database's write lock, taken first): an alias or name
match through ``knowledge_entity_keys`` (unique per guild, type and normalised key), then
the nearest stored name vector of the same type and model (pgvector ``<=>`` on PostgreSQL,
NumPy on SQLite) at or above the dedup threshold. Only then is the entity inserted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables, vectors

E, K, V = tables.entities, tables.entity_keys, tables.embeddings
LOCK_PREFIX = "gigi-knowledge-entities:"
MAX_ALIASES = 20


def key_of(name: str) -> str:
    """The normalised name (lower case, spacing collapsed) as the keys and index hold it."""
    return " ".join(name.lower().split())[:160]


def insert(dialect: str, table: sa.Table) -> Any:
    """The dialect's INSERT, which has ON CONFLICT."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


async def lock_guilds(conn: Any, dialect: str, guild_ids: Iterable[str]) -> None:
    """Serialise entity writes of these guilds across processes until the transaction ends.
    Taken first in the transaction and in sorted order, so two batches never deadlock."""
    guilds = sorted(set(guild_ids))
    if not guilds:
        return
    if dialect == "postgresql":
        for g in guilds:
            await conn.execute(
                sa.text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
                {"k": LOCK_PREFIX + g},
            )
        return
    # SQLite: a write statement (matching nothing) takes the database's write lock now, so
    # the reads that follow see every committed entity and nobody writes in between.
    await conn.execute(sa.update(K).where(sa.false()).values(entity_id=K.c.entity_id))


async def stored_match(
    conn: Any,
    dialect: str,
    row: dict[str, Any],
    keys: Sequence[str],
    vrow: dict[str, Any] | None,
    threshold: float,
) -> str | None:
    """The id of a stored entity this one is (alias/name key first, then cosine), or None."""
    wanted = [k for k in dict.fromkeys(keys) if k]
    if wanted:
        found = await conn.scalar(
            sa.select(K.c.entity_id)
            .join(E, E.c.id == K.c.entity_id)
            .where(
                K.c.guild_id == row["guild_id"],
                K.c.entity_type == row["entity_type"],
                K.c.key.in_(wanted),
                E.c.deleted.is_(False),
            )
            .order_by((K.c.key == row["name_key"]).desc(), K.c.key)
            .limit(1)
        )
        if found is not None:
            return str(found)
    if vrow is None:
        return None
    best = await _nearest(conn, dialect, row["guild_id"], row["entity_type"], vrow)
    if best is not None and best[0] >= threshold:
        return best[1]
    return None


async def _nearest(
    conn: Any, dialect: str, guild_id: str, entity_type: str, vrow: dict[str, Any]
) -> tuple[float, str] | None:
    """(cosine, entity id) of the nearest live entity name vector of this type and model."""
    qv = vectors.decode(vrow["vector"])
    dims = int(qv.shape[0])
    if dialect == "postgresql":
        distance = f"(v.embedding::vector({dims}) <=> CAST(:q AS vector({dims})))"
        sql = sa.text(
            f"SELECT v.source_id, 1 - {distance} AS score FROM knowledge_embeddings v "
            "JOIN knowledge_entities e ON e.id = v.source_id AND e.deleted = false "
            "WHERE v.guild_id = :g AND v.source_type = 'entity' AND v.entity_type = :t "
            "AND v.model = :m AND v.dims = :d AND v.embedding IS NOT NULL "
            f"ORDER BY {distance} + 0 LIMIT 1"  # exact: never a filtered HNSW scan
        )
        params = {"g": guild_id, "t": entity_type, "m": vrow["model"], "d": dims}  # few rows
        got = (await conn.execute(sql, {**params, "q": vectors.pg_text(qv)})).first()
        return None if got is None else (float(got.score), str(got.source_id))
    rows = (
        await conn.execute(
            sa.select(V.c.source_id, V.c.vector)
            .join(E, E.c.id == V.c.source_id)
            .where(
                V.c.guild_id == guild_id,
                V.c.source_type == "entity",
                V.c.entity_type == entity_type,
                V.c.model == vrow["model"],
                V.c.dims == dims,
                E.c.deleted.is_(False),
            )
        )
    ).all()
    top = vectors.best(qv, list(rows), 1)
    return (top[0][0], str(top[0][1].source_id)) if top else None


async def add_keys(
    conn: Any, dialect: str, guild_id: str, entity_type: str, entity_id: str, names: Iterable[str]
) -> None:
    """Claim these names' keys for the entity; a key another entity holds stays its own."""
    keys = [k for k in dict.fromkeys(key_of(n) for n in names) if k]
    if not keys:
        return
    rows = [
        {"guild_id": guild_id, "entity_type": entity_type, "key": k, "entity_id": entity_id}
        for k in keys
    ]
    await conn.execute(insert(dialect, K).on_conflict_do_nothing(), rows)


async def merge_into(
    conn: Any,
    dialect: str,
    entity_id: str,
    entity_type: str,
    guild_id: str,
    names: Sequence[str],
    values: dict[str, Any],
) -> None:
    """Count one more mention on a stored entity and add ``names`` it does not have yet as
    aliases (read from the store, so another process's aliases are kept)."""
    values = dict(values)
    names = [n for n in names if n]
    if names:
        current = (
            await conn.execute(sa.select(E.c.name, E.c.aliases).where(E.c.id == entity_id))
        ).first()
        if current is not None:
            aliases = list(current.aliases or [])
            known = {key_of(current.name), *(key_of(a) for a in aliases)}
            for n in names:
                if key_of(n) not in known and len(aliases) < MAX_ALIASES:
                    aliases.append(n)
                    known.add(key_of(n))
            values["aliases"] = aliases
            await add_keys(conn, dialect, guild_id, entity_type, entity_id, names)
    await conn.execute(sa.update(E).where(E.c.id == entity_id).values(**values))
