"""knowledge: on PostgreSQL, each knowledge vector also as a pgvector (``embedding``), so
semantic search orders by ``<=>`` in the store and reads back only the nearest rows.

Revision ID: knowledge_0004

Untyped ``vector`` (dimensions differ by model; queries cast to ``vector(dims)`` with a
``dims`` filter). No HNSW index: a channel holds thousands of knowledge vectors, not
millions, and an exact scan over the (guild, channel, model) btree is a few milliseconds
(docs/knowledge.md "Vectors"). Existing rows are filled from their float32 blobs.
SQLite: nothing changes (NumPy over the blobs).
"""

import struct

import sqlalchemy as sa
from alembic import op

revision = "knowledge_0004"
down_revision = "knowledge_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE knowledge_embeddings ADD COLUMN embedding vector")
    rows = conn.execute(sa.text("SELECT id, dims, vector FROM knowledge_embeddings")).all()
    for r in rows:
        values = struct.unpack(f"<{r.dims}f", bytes(r.vector))
        conn.execute(
            sa.text("UPDATE knowledge_embeddings SET embedding = CAST(:e AS vector) WHERE id = :i"),
            {"e": "[" + ",".join(f"{x:.7g}" for x in values) + "]", "i": r.id},
        )
    op.create_index(
        "ix_knowledge_embeddings_near",
        "knowledge_embeddings",
        ["guild_id", "channel_id", "model", "dims"],
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index("ix_knowledge_embeddings_near", table_name="knowledge_embeddings")
    op.execute("ALTER TABLE knowledge_embeddings DROP COLUMN embedding")
