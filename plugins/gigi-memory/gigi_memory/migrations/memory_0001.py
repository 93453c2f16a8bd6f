"""memory: guild policies, channel modes, the message ledger, mentions and full-text search.

Revision ID: memory_0001

Times of messages are integer milliseconds since the epoch (UTC), so retention arithmetic
(``created_ms + days * 86400000``) and comparisons are the same SQL on both backends.

Full text: on SQLite an external-content FTS5 table over ``memory_messages.search_text``,
kept in step by triggers (any writer, any process); on PostgreSQL a stored generated
``tsvector`` with the unstemmed ``simple`` configuration and a GIN index. Search text is
pre-tokenised by the plugin (words separated by single spaces), so both engines see the
same words.
"""

import sqlalchemy as sa
from alembic import op

revision = "memory_0001"
down_revision = None
branch_labels = ("memory",)
depends_on = "kernel_0006"

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # an INTEGER PRIMARY KEY is the rowid


def upgrade() -> None:
    op.create_table(
        "memory_guild_policies",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("default_retention_days", sa.Integer, nullable=True),
        sa.Column("raw_storage_mode", sa.String(16), nullable=False, server_default="encrypted"),
        sa.Column("bots_allowed", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("embeddings_enabled", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("last_purge_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_purge_count", sa.Integer, nullable=True),
        sa.Column("updated_by", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "memory_channels",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), primary_key=True),
        sa.Column("mode", sa.String(8), nullable=False, server_default="off"),
        sa.Column("retention_days", sa.Integer, nullable=True),
        sa.Column("enabled_at_ms", sa.BigInteger, nullable=True),
        sa.Column("updated_by", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "memory_messages",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("parent_channel_id", sa.String(64), nullable=True),
        sa.Column("author_id", sa.String(64), nullable=False),
        sa.Column("surface", sa.String(32), nullable=False, server_default="discord"),
        sa.Column("reply_to_id", sa.String(64), nullable=True),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("edited_ms", sa.BigInteger, nullable=True),
        sa.Column("deleted_ms", sa.BigInteger, nullable=True),
        sa.Column("retention_until_ms", sa.BigInteger, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=True),
        sa.Column("search_text", sa.Text, nullable=True),
        sa.Column("sealed_key_id", sa.String(32), nullable=True),
        sa.Column("sealed_nonce", sa.LargeBinary, nullable=True),
        sa.Column("sealed_text", sa.LargeBinary, nullable=True),
        sa.UniqueConstraint("guild_id", "message_id", name="uq_memory_messages_guild_message"),
    )
    op.create_index(
        "ix_memory_messages_channel", "memory_messages", ["guild_id", "channel_id", "created_ms"]
    )
    op.create_index(
        "ix_memory_messages_author", "memory_messages", ["guild_id", "author_id", "created_ms"]
    )
    op.create_index(
        "ix_memory_messages_parent",
        "memory_messages",
        ["guild_id", "parent_channel_id", "created_ms"],
    )
    op.create_index("ix_memory_messages_retention", "memory_messages", ["retention_until_ms"])
    op.create_table(
        "memory_mentions",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("message_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("author_id", sa.String(64), nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    )
    op.create_index(
        "ix_memory_mentions_user", "memory_mentions", ["guild_id", "user_id", "channel_id"]
    )

    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE memory_fts USING fts5(search_text, content='memory_messages', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 0')"
        )
        op.execute(
            "CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory_messages "
            "WHEN new.search_text IS NOT NULL BEGIN "
            "INSERT INTO memory_fts(rowid, search_text) VALUES (new.id, new.search_text); END"
        )
        op.execute(
            "CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory_messages "
            "WHEN old.search_text IS NOT NULL BEGIN "
            "INSERT INTO memory_fts(memory_fts, rowid, search_text) "
            "VALUES ('delete', old.id, old.search_text); END"
        )
        op.execute(
            "CREATE TRIGGER memory_fts_update AFTER UPDATE OF search_text ON memory_messages "
            "BEGIN "
            "INSERT INTO memory_fts(memory_fts, rowid, search_text) "
            "SELECT 'delete', old.id, old.search_text WHERE old.search_text IS NOT NULL; "
            "INSERT INTO memory_fts(rowid, search_text) "
            "SELECT new.id, new.search_text WHERE new.search_text IS NOT NULL; END"
        )
    else:
        op.execute(
            "ALTER TABLE memory_messages ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS "
            "(to_tsvector('simple'::regconfig, coalesce(search_text, ''))) STORED"
        )
        op.execute("CREATE INDEX ix_memory_messages_tsv ON memory_messages USING gin (search_tsv)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("memory_fts_insert", "memory_fts_delete", "memory_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS memory_fts")
    op.drop_table("memory_mentions")
    op.drop_table("memory_messages")
    op.drop_table("memory_channels")
    op.drop_table("memory_guild_policies")
