"""memory: segments with their vectors, vector state per message, embedding source, redaction.

Revision ID: memory_0002

A segment is a span of one message's (redacted) text and its embedding; it is stored only
with its vector (``model`` and ``dims`` on every row), never with text. ``vector_model`` on
a message names the model its current segments came from (NULL: not embedded yet, the
vector lag ``/memory status`` shows); an edit clears it and deletes the segments.

PostgreSQL: an untyped ``vector`` column (dimensions differ by model) with a partial HNSW
index per dimension over ``embedding::vector(N)``; 256 (the local embedder) is created
here. SQLite: float32 blobs, searched exactly with NumPy (docs/design-notes.md).
"""

import sqlalchemy as sa
from alembic import op

revision = "memory_0002"
down_revision = "memory_0001"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.add_column(
        "memory_guild_policies",
        sa.Column("embedding_source", sa.String(16), nullable=False, server_default="local"),
    )
    op.add_column("memory_guild_policies", sa.Column("redaction", sa.Text, nullable=True))
    op.add_column("memory_messages", sa.Column("vector_model", sa.String(200), nullable=True))
    op.create_index(
        "ix_memory_messages_vectors", "memory_messages", ["guild_id", "vector_model", "id"]
    )
    op.create_table(
        "memory_segments",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("message_row_id", ID, nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("root_channel_id", sa.String(64), nullable=False),
        sa.Column("author_id", sa.String(64), nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("span_start", sa.Integer, nullable=False),
        sa.Column("span_end", sa.Integer, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("dims", sa.Integer, nullable=False),
        sa.Column("embedding", sa.LargeBinary, nullable=True),  # SQLite; PostgreSQL below
        sqlite_autoincrement=True,  # ids never reused: the NumPy cache detects changes by them
    )
    if postgres:
        op.execute("ALTER TABLE memory_segments DROP COLUMN embedding")
        op.execute("ALTER TABLE memory_segments ADD COLUMN embedding vector NOT NULL")
        op.execute(
            "CREATE INDEX ix_memory_segments_hnsw_256 ON memory_segments USING hnsw "
            "((embedding::vector(256)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
            "WHERE dims = 256"
        )
    op.create_index(
        "ix_memory_segments_root",
        "memory_segments",
        ["guild_id", "root_channel_id", "model", "dims"],
    )
    op.create_index(
        "ix_memory_segments_channel", "memory_segments", ["guild_id", "channel_id", "model", "dims"]
    )
    op.create_index("ix_memory_segments_message", "memory_segments", ["message_row_id"])


def downgrade() -> None:
    op.drop_table("memory_segments")
    op.drop_index("ix_memory_messages_vectors", "memory_messages")
    with op.batch_alter_table("memory_messages") as batch:
        batch.drop_column("vector_model")
    with op.batch_alter_table("memory_guild_policies") as batch:
        batch.drop_column("redaction")
        batch.drop_column("embedding_source")
