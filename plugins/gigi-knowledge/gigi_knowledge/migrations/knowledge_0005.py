"""knowledge: every entity's normalised name and aliases as keys, unique per (guild, type),
so an alias match is decided by the store and holds across processes.

Revision ID: knowledge_0005

Existing entities are backfilled, earliest first: a key two entities share stays with the
one seen first (the later one keeps its row; nothing is merged by a migration).
"""

import sqlalchemy as sa
from alembic import op

revision = "knowledge_0005"
down_revision = "knowledge_0004"
branch_labels = None
depends_on = None


def _key(name: str) -> str:
    return " ".join(name.lower().split())[:160]


def upgrade() -> None:
    op.create_table(
        "knowledge_entity_keys",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("entity_type", sa.String(16), primary_key=True),
        sa.Column("key", sa.String(160), primary_key=True),
        sa.Column("entity_id", sa.String(36), nullable=False),
    )
    op.create_index("ix_knowledge_entity_keys_entity", "knowledge_entity_keys", ["entity_id"])
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT id, guild_id, entity_type, name, aliases FROM knowledge_entities "
            "WHERE deleted = :no ORDER BY first_seen_ms, id"
        ),
        {"no": False},
    ).all()
    taken: set[tuple[str, str, str]] = set()
    out = []
    for r in rows:
        aliases = r.aliases
        if isinstance(aliases, str):  # SQLite hands JSON back as text here
            import json

            aliases = json.loads(aliases)
        for name in [r.name, *(aliases or [])]:
            key = (r.guild_id, r.entity_type, _key(str(name)))
            if key[2] and key not in taken:
                taken.add(key)
                out.append({"g": key[0], "t": key[1], "k": key[2], "e": r.id})
    if out:
        conn.execute(
            sa.text(
                "INSERT INTO knowledge_entity_keys (guild_id, entity_type, key, entity_id) "
                "VALUES (:g, :t, :k, :e)"
            ),
            out,
        )


def downgrade() -> None:
    op.drop_index("ix_knowledge_entity_keys_entity", table_name="knowledge_entity_keys")
    op.drop_table("knowledge_entity_keys")
