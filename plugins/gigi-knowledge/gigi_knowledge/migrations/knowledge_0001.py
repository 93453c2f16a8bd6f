"""knowledge: channel opt-in and context, decisions, actions, entities, relationships,
signals, embeddings, summaries and contradictions.

Revision ID: knowledge_0001

Times are integer milliseconds since the epoch (UTC); arrays are JSON lists; vectors are
float32 blobs. No column holds message text: ``source_ref`` is message ids and a time range.
"""

import sqlalchemy as sa
from alembic import op

revision = "knowledge_0001"
down_revision = None
branch_labels = ("knowledge",)
depends_on = "kernel_0006"

TABLES = (
    "knowledge_contradictions",
    "knowledge_summaries",
    "knowledge_embeddings",
    "knowledge_signals",
    "knowledge_relationships",
    "knowledge_entities",
    "knowledge_actions",
    "knowledge_decisions",
    "knowledge_channels",
)


def upgrade() -> None:
    op.create_table(
        "knowledge_channels",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), primary_key=True),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("deleted", sa.Boolean, nullable=False),
        sa.Column("channel_name", sa.String(200)),
        sa.Column("purpose", sa.String(500)),
        sa.Column("context_type", sa.String(16)),
        sa.Column("tags", sa.JSON),
        sa.Column("stakeholders", sa.JSON),
        sa.Column("related_channels", sa.JSON),
        sa.Column("context_updated_ms", sa.BigInteger),
        sa.Column("context_updated_by", sa.String(64)),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("locale", sa.String(16), nullable=False),
        sa.Column("joined_ms", sa.BigInteger, nullable=False),
        sa.Column("updated_by", sa.String(64)),
        sa.Column("updated_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "knowledge_decisions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("summary", sa.String(500), nullable=False),
        sa.Column("rationale", sa.String(1000)),
        sa.Column("decided_by", sa.JSON, nullable=False),
        sa.Column("asserted_by", sa.JSON, nullable=False),
        sa.Column("decided_ms", sa.BigInteger, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("superseded_by", sa.String(36)),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "knowledge_actions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("owner_id", sa.String(64)),
        sa.Column("owner_name", sa.String(100)),
        sa.Column("deadline_ms", sa.BigInteger),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("staleness_ms", sa.BigInteger),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("related_decision", sa.String(36)),
        sa.Column("asserted_by", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("last_status_check_ms", sa.BigInteger),
        sa.Column("nudged_ms", sa.BigInteger),
    )
    op.create_table(
        "knowledge_entities",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("entity_type", sa.String(16), nullable=False),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("aliases", sa.JSON, nullable=False),
        sa.Column("user_id", sa.String(64)),
        sa.Column("meta", sa.JSON, nullable=False),
        sa.Column("first_seen_ms", sa.BigInteger, nullable=False),
        sa.Column("last_mentioned_ms", sa.BigInteger, nullable=False),
        sa.Column("mention_count", sa.Integer, nullable=False),
        sa.Column("deleted", sa.Boolean, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
    )
    op.create_table(
        "knowledge_relationships",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("source_id", sa.String(36), nullable=False),
        sa.Column("target_id", sa.String(36), nullable=False),
        sa.Column("relationship", sa.String(32), nullable=False),
        sa.Column("context", sa.String(300)),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("first_observed_ms", sa.BigInteger, nullable=False),
        sa.Column("last_observed_ms", sa.BigInteger, nullable=False),
        sa.Column("observation_count", sa.Integer, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
        sa.UniqueConstraint(
            "source_id", "target_id", "relationship", "channel_id", name="uq_knowledge_relationship"
        ),
    )
    op.create_table(
        "knowledge_signals",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("signal_type", sa.String(16), nullable=False),
        sa.Column("summary", sa.String(400), nullable=False),
        sa.Column("participants", sa.JSON, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("related_entities", sa.JSON, nullable=False),
        sa.Column("occurred_ms", sa.BigInteger, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "knowledge_embeddings",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("source_type", sa.String(16), nullable=False),
        sa.Column("source_id", sa.String(36), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("author_id", sa.String(64)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("topic_tags", sa.JSON, nullable=False),
        sa.Column("entity_type", sa.String(16)),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("dims", sa.Integer, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "knowledge_summaries",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("scope_type", sa.String(16), nullable=False),
        sa.Column("scope_id", sa.String(64), nullable=False),
        sa.Column("period_start_ms", sa.BigInteger, nullable=False),
        sa.Column("period_end_ms", sa.BigInteger, nullable=False),
        sa.Column("granularity", sa.String(16), nullable=False),
        sa.Column("summary", sa.String(4000), nullable=False),
        sa.Column("key_decisions", sa.JSON, nullable=False),
        sa.Column("key_actions", sa.JSON, nullable=False),
        sa.Column("active_topics", sa.JSON, nullable=False),
        sa.Column("participants", sa.JSON, nullable=False),
        sa.Column("sentiment", sa.String(16)),
        sa.Column("message_count", sa.Integer),
        sa.Column("model_version", sa.String(200)),
        sa.Column("generated_ms", sa.BigInteger, nullable=False),
        sa.UniqueConstraint(
            "guild_id",
            "scope_type",
            "scope_id",
            "granularity",
            "period_start_ms",
            name="uq_knowledge_summary_period",
        ),
    )
    op.create_table(
        "knowledge_contradictions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("earlier_id", sa.String(36), nullable=False),
        sa.Column("later_id", sa.String(36), nullable=False),
        sa.Column("similarity", sa.Float, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("posted_message_id", sa.String(64)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("updated_ms", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("earlier_id", "later_id", name="uq_knowledge_contradiction"),
    )
    ix = op.create_index
    ix(
        "ix_knowledge_decisions_channel",
        "knowledge_decisions",
        ["guild_id", "channel_id", "decided_ms"],
    )
    ix("ix_knowledge_decisions_status", "knowledge_decisions", ["guild_id", "status"])
    ix("ix_knowledge_actions_owner", "knowledge_actions", ["guild_id", "owner_id", "status"])
    ix("ix_knowledge_actions_stale", "knowledge_actions", ["status", "staleness_ms"])
    ix(
        "ix_knowledge_actions_channel",
        "knowledge_actions",
        ["guild_id", "channel_id", "created_ms"],
    )
    ix("ix_knowledge_entities_name", "knowledge_entities", ["guild_id", "entity_type", "name"])
    ix("ix_knowledge_entities_user", "knowledge_entities", ["guild_id", "user_id"])
    ix("ix_knowledge_rel_source", "knowledge_relationships", ["source_id", "relationship"])
    ix("ix_knowledge_rel_target", "knowledge_relationships", ["target_id", "relationship"])
    ix(
        "ix_knowledge_signals_channel",
        "knowledge_signals",
        ["guild_id", "channel_id", "occurred_ms"],
    )
    ix("ix_knowledge_signals_type", "knowledge_signals", ["signal_type", "occurred_ms"])
    ix(
        "ix_knowledge_embeddings_channel",
        "knowledge_embeddings",
        ["guild_id", "channel_id", "created_ms"],
    )
    ix("ix_knowledge_embeddings_source", "knowledge_embeddings", ["source_type", "source_id"])
    ix(
        "ix_knowledge_summaries_scope",
        "knowledge_summaries",
        ["guild_id", "scope_id", "period_end_ms"],
    )


def downgrade() -> None:
    for name in TABLES:
        op.drop_table(name)
