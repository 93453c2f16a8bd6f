"""knowledge: a normalised entity name key, unique per (guild, type), so two processes
extracting the same guild cannot insert one entity twice (``INSERT ... ON CONFLICT``).

Revision ID: knowledge_0002

Existing rows get their key (lower case, spaces collapsed, as ``writer.extraction.name_key``); where
two rows of a guild and type already share one, the older keeps it and the others get the
key with their id appended (they stay distinct rows, as they were).
"""

import sqlalchemy as sa
from alembic import op

revision = "knowledge_0002"
down_revision = "knowledge_0001"
branch_labels = None
depends_on = None


def _key(name: str) -> str:
    return " ".join(name.lower().split())[:160]


def upgrade() -> None:
    op.add_column("knowledge_entities", sa.Column("name_key", sa.String(160)))
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT id, guild_id, entity_type, name FROM knowledge_entities "
            "ORDER BY first_seen_ms, id"
        )
    ).all()
    seen: set[tuple[str, str, str]] = set()
    for r in rows:
        key = _key(r.name)
        if (r.guild_id, r.entity_type, key) in seen:
            key = f"{key[:120]}#{r.id}"
        seen.add((r.guild_id, r.entity_type, key))
        conn.execute(
            sa.text("UPDATE knowledge_entities SET name_key = :k WHERE id = :i"),
            {"k": key, "i": r.id},
        )
    op.create_index(
        "uq_knowledge_entity_key",
        "knowledge_entities",
        ["guild_id", "entity_type", "name_key"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("uq_knowledge_entity_key", table_name="knowledge_entities")
    with op.batch_alter_table("knowledge_entities") as batch:
        batch.drop_column("name_key")
