"""The plugin's tables as SQLAlchemy Core objects (created by ``migrations/memory_0001``).

Not the kernel's metadata: these describe tables the plugin's own alembic branch made.
The full-text parts (SQLite's ``memory_fts``, PostgreSQL's ``search_tsv``) are reached with
SQL text in ``gigi_memory.search.reads``.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

policies = sa.Table(
    "memory_guild_policies",
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("default_retention_days", sa.Integer),
    sa.Column("raw_storage_mode", sa.String(16), nullable=False),
    sa.Column("bots_allowed", sa.Boolean, nullable=False),
    sa.Column("embeddings_enabled", sa.Boolean, nullable=False),
    sa.Column("embedding_source", sa.String(16), nullable=False),
    sa.Column("redaction", sa.Text),
    sa.Column("last_purge_at", sa.DateTime(timezone=True)),
    sa.Column("last_purge_count", sa.Integer),
    sa.Column("updated_by", sa.String(64)),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

channels = sa.Table(
    "memory_channels",
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("channel_id", sa.String(64), primary_key=True),
    sa.Column("mode", sa.String(8), nullable=False),
    sa.Column("retention_days", sa.Integer),
    sa.Column("enabled_at_ms", sa.BigInteger),
    sa.Column("updated_by", sa.String(64)),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

messages = sa.Table(
    "memory_messages",
    metadata,
    sa.Column("id", ID, primary_key=True, autoincrement=True),
    sa.Column("guild_id", sa.String(64), nullable=False),
    sa.Column("message_id", sa.String(64), nullable=False),
    sa.Column("channel_id", sa.String(64), nullable=False),
    sa.Column("parent_channel_id", sa.String(64)),
    sa.Column("author_id", sa.String(64), nullable=False),
    sa.Column("surface", sa.String(32), nullable=False),
    sa.Column("reply_to_id", sa.String(64)),
    sa.Column("created_ms", sa.BigInteger, nullable=False),
    sa.Column("edited_ms", sa.BigInteger),
    sa.Column("deleted_ms", sa.BigInteger),
    sa.Column("retention_until_ms", sa.BigInteger, nullable=False),
    sa.Column("content_hash", sa.String(64)),
    sa.Column("search_text", sa.Text),
    sa.Column("sealed_key_id", sa.String(32)),
    sa.Column("sealed_nonce", sa.LargeBinary),
    sa.Column("sealed_text", sa.LargeBinary),
    sa.Column("vector_model", sa.String(200)),  # the model of its segments; NULL: not embedded
    sa.Column("embed_claim", sa.String(32)),  # migrations/memory_0005: a batch embedding it
    sa.Column("embed_claimed_ms", sa.BigInteger),
    sa.UniqueConstraint("guild_id", "message_id", name="uq_memory_messages_guild_message"),
)

mentions = sa.Table(
    "memory_mentions",
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("message_id", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(64), primary_key=True),
    sa.Column("channel_id", sa.String(64), nullable=False),
    sa.Column("author_id", sa.String(64), nullable=False),
    sa.Column("created_ms", sa.BigInteger, nullable=False),
)


# The embedding column differs by backend (float32 blob / pgvector), so it is reached with
# SQL text in ``gigi_memory.embedding.vectors`` and ``gigi_memory.search.vecsearch``.
segments = sa.Table(
    "memory_segments",
    metadata,
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
)


def insert_for(dialect: str, table: sa.Table) -> sa.Insert:
    """``INSERT ... ON CONFLICT DO NOTHING`` in the backend's dialect."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table).on_conflict_do_nothing()  # type: ignore[no-any-return]


def upsert_for(dialect: str, table: sa.Table, keys: list[str], values: dict) -> sa.Insert:
    """``INSERT ... ON CONFLICT (keys) DO UPDATE`` setting ``values`` (minus the keys)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(table).values(**values)
    return stmt.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=keys, set_={k: v for k, v in values.items() if k not in keys}
    )


backfills = sa.Table(
    "memory_backfills",  # migrations/memory_0003
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("channel_id", sa.String(64), primary_key=True),
    sa.Column("job_id", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # queued|running|done|stopped|failed
    sa.Column("cursor", sa.String(64)),
    sa.Column("since_ms", sa.BigInteger),
    sa.Column("pages", sa.Integer, nullable=False),
    sa.Column("seen", sa.Integer, nullable=False),
    sa.Column("imported", sa.Integer, nullable=False),
    sa.Column("skipped", sa.Integer, nullable=False),
    sa.Column("error", sa.String(64)),
    sa.Column("started_by", sa.String(64)),
    sa.Column("started_ms", sa.BigInteger, nullable=False),
    sa.Column("updated_ms", sa.BigInteger, nullable=False),
)


erasures = sa.Table(
    "memory_erasures",  # migrations/memory_0003: who asked to be forgotten, and when
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),  # "*": every guild
    sa.Column("author_key", sa.String(64), primary_key=True),  # kernel.privacy.pseudonym
    sa.Column("erased_ms", sa.BigInteger, nullable=False),
)


tombstones = sa.Table(
    "memory_tombstones",  # migrations/memory_0004: deletes and edits of messages not stored yet
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("message_id", sa.String(64), primary_key=True),
    sa.Column("channel_id", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # deleted | edited | withheld
    sa.Column("at_ms", sa.BigInteger, nullable=False),
    sa.Column("until_ms", sa.BigInteger, nullable=False),
)


authors = sa.Table(
    "memory_authors",  # migrations/memory_0006: the names members wrote under
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("author_id", sa.String(64), primary_key=True),
    sa.Column("name_words", sa.String(200), primary_key=True),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("first_ms", sa.BigInteger, nullable=False),
    sa.Column("last_ms", sa.BigInteger, nullable=False),
)
