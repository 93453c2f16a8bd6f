"""One extraction's writes as planned under the guild lock (``extraction``), and how the
``Batcher`` applies them inside its transaction.

Ops: ``("entity", row, vector row | None, names, threshold)`` — an entity the cache calls
new, checked against the store first (``dedup.stored_match``); ``("touch", entity id,
values, entity type, new names)`` — one more mention of a known entity, with the aliases
it gained; ``("rel", row)``; ``("rows", table, rows)``.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from gigi_knowledge import tables, vectors
from gigi_knowledge.writer import dedup

Op = tuple[Any, ...]
E, R, V = tables.entities, tables.relationships, tables.embeddings


async def apply_ops(svc: Any, guild_id: str, ops: list[Op], conn: Any) -> None:
    """Run the planned writes. An entity the store already holds (an alias, name or cosine
    match another process stored, or a same-key row: ``uq_knowledge_entity_key``) is counted
    on that row instead, and this extraction's relationships point at it. The mapping
    outlives the unit: extractions planned before the cache reload still name this
    process's id for that entity."""
    ids: dict[str, str] = svc.entity_ids
    dialect = svc.dialect
    for op in ops:
        kind = op[0]
        if kind == "entity":
            await _entity(svc, guild_id, conn, op[1], op[2], op[3], op[4])
        elif kind == "touch":
            eid = ids.get(op[1], op[1])
            await dedup.merge_into(conn, dialect, eid, op[3], guild_id, op[4], op[2])
        elif kind == "rel":
            row = dict(op[1])
            row["source_id"] = ids.get(row["source_id"], row["source_id"])
            row["target_id"] = ids.get(row["target_id"], row["target_id"])
            if row["source_id"] == row["target_id"]:
                continue
            stmt = dedup.insert(dialect, R).values(**row)
            await conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["source_id", "target_id", "relationship", "channel_id"],
                    set_={
                        "observation_count": R.c.observation_count + 1,
                        "last_observed_ms": row["last_observed_ms"],
                        "source_ref": row["source_ref"],
                    },
                )
            )
        elif op[2]:  # "rows": one statement per table (executemany)
            table, rows = op[1], op[2]
            if table is V:
                rows = [vectors.with_pg(dialect, r) for r in rows]
            await conn.execute(sa.insert(table), rows)


async def _entity(
    svc: Any,
    guild_id: str,
    conn: Any,
    row: dict[str, Any],
    vrow: dict[str, Any] | None,
    names: list[str],
    threshold: float,
) -> None:
    ids: dict[str, str] = svc.entity_ids
    dialect = svc.dialect
    mention = {
        "mention_count": E.c.mention_count + 1,
        "last_mentioned_ms": row["last_mentioned_ms"],
    }
    if row.get("user_id"):
        mention["user_id"] = row["user_id"]
    keys = [dedup.key_of(n) for n in names]
    found = await dedup.stored_match(conn, dialect, row, keys, vrow, threshold)
    if found is not None:
        ids[row["id"]] = found
        svc.caches.forget(guild_id)  # reload: the stored entity is another process's
        await dedup.merge_into(conn, dialect, found, row["entity_type"], guild_id, names, mention)
        return
    stmt = dedup.insert(dialect, E).values(**row)
    stmt = stmt.on_conflict_do_update(
        index_elements=["guild_id", "entity_type", "name_key"], set_=mention
    ).returning(E.c.id)
    got = await conn.scalar(stmt)
    if got != row["id"]:
        ids[row["id"]] = got
        svc.caches.forget(guild_id)
        return
    # Stored as planned: a mapping left by a rolled-back attempt of this batch (to a row
    # that attempt inserted) must not redirect the replay's relationships.
    ids.pop(row["id"], None)
    await dedup.add_keys(conn, dialect, guild_id, row["entity_type"], row["id"], names)
    if vrow is not None:
        await conn.execute(sa.insert(V).values(**vectors.with_pg(dialect, vrow)))
