"""The plugin's later migrations on a store with data: knowledge_0002 gives existing
entities their name key (a duplicate keeps its row, with its id in the key) and
knowledge_0004 fills PostgreSQL's pgvector column from the blobs, knowledge_0005 gives every
name and alias its dedup key."""

from __future__ import annotations

from typing import Any

import numpy as np
import sqlalchemy as sa
from gigi_knowledge import vectors
from knowledge_helpers import rows

from gigi_core.store.migrate import alembic_config, upgrade


def _entity(i: str, name: str, seen: int) -> dict[str, Any]:
    return {
        "id": i,
        "guild_id": "g1",
        "channel_id": "c1",
        "entity_type": "service",
        "name": name,
        "aliases": "[]",
        "meta": "{}",
        "first_seen_ms": seen,
        "last_mentioned_ms": seen,
        "mention_count": 1,
        "deleted": False,
        "source_ref": "{}",
    }


async def test_later_migrations_keep_existing_rows(kernel: Any) -> None:
    from alembic import command

    db = kernel.db
    cfg = alembic_config(list(kernel.registry.migrations.values()))

    def down(sync_conn: Any) -> None:
        cfg.attributes["connection"] = sync_conn
        command.downgrade(cfg, "knowledge_0001")

    async with db.engine.begin() as conn:
        await conn.run_sync(down)
        cols = ", ".join(_entity("x", "x", 0))
        binds = ", ".join(f":{c}" for c in _entity("x", "x", 0))
        for e in (
            _entity("e-old", "Kafka  Cluster", 1),
            _entity("e-new", "kafka cluster", 2),
            {**_entity("e-other", "Redis", 3), "aliases": '["Redis  Cache", "kafka cluster"]'},
        ):
            await conn.execute(
                sa.text(f"INSERT INTO knowledge_entities ({cols}) VALUES ({binds})"), e
            )
        vec = vectors.unit(np.arange(1, 5, dtype=np.float32))
        await conn.execute(
            sa.text(
                "INSERT INTO knowledge_embeddings (id, guild_id, source_type, source_id, "
                "channel_id, created_ms, topic_tags, model, dims, vector) VALUES "
                "('v1', 'g1', 'decision', 'd1', 'c1', 1, '[]', 'm', 4, :blob)"
            ),
            {"blob": vectors.encode(vec)},
        )
    await upgrade(db, kernel.registry.migrations)
    keys = {r.id: r.name_key for r in await rows(kernel, "knowledge_entities")}
    assert keys == {
        "e-old": "kafka cluster",
        "e-new": "kafka cluster#e-new",
        "e-other": "redis",
    }
    # knowledge_0005: names and aliases as dedup keys; a shared key stays with the earliest
    keys = {(r.key, r.entity_id) for r in await rows(kernel, "knowledge_entity_keys")}
    assert keys == {
        ("kafka cluster", "e-old"),
        ("redis", "e-other"),
        ("redis cache", "e-other"),
    }
    if db.dialect == "postgresql":
        (row,) = await rows(kernel, "knowledge_embeddings")
        stored = np.array([float(x) for x in row.embedding.strip("[]").split(",")])
        assert np.allclose(stored, vec, atol=1e-6)
