"""The plugin's tables as SQLAlchemy Core objects (created by ``migrations/knowledge_000*``).

The knowledge schema, with three deliberate differences from its design: times are integer milliseconds since the
epoch (UTC), as in guild memory, so the same SQL runs on both backends; arrays are JSON
lists; vectors are float32 blobs compared in NumPy, and on PostgreSQL also a pgvector
(``knowledge_0004``). No table has a column for message text: ``source_ref`` holds message
ids and a time range only.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()


class _VectorCast(sa.types.UserDefinedType[str]):
    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "vector"


class PgVector(sa.types.UserDefinedType[str]):
    """pgvector's untyped ``vector`` (PostgreSQL only), bound as its text form and cast."""

    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "vector"

    def bind_expression(self, bindvalue: object) -> object:
        return sa.cast(sa.type_coerce(bindvalue, sa.Text), _VectorCast())


ID = sa.String(36)  # uuid4 hex with dashes


def _common(*extra: sa.Column) -> list[sa.Column]:
    return [
        sa.Column("id", ID, primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),  # the design's organisation_id
        *extra,
    ]


channels = sa.Table(
    "knowledge_channels",
    metadata,
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
    sa.Column("parent_id", sa.String(64)),  # a thread's parent channel (knowledge_0007)
)

decisions = sa.Table(
    "knowledge_decisions",
    metadata,
    *_common(
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("summary", sa.String(500), nullable=False),
        sa.Column("rationale", sa.String(1000)),
        sa.Column("decided_by", sa.JSON, nullable=False),  # member ids seen in the window
        sa.Column("asserted_by", sa.JSON, nullable=False),  # authors of the cited messages
        sa.Column("decided_ms", sa.BigInteger, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),  # active|superseded|reversed|questioned
        sa.Column("superseded_by", ID),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    ),
)

actions = sa.Table(
    "knowledge_actions",
    metadata,
    *_common(
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("owner_id", sa.String(64)),
        sa.Column("owner_name", sa.String(100)),
        sa.Column("deadline_ms", sa.BigInteger),
        sa.Column("status", sa.String(16), nullable=False),  # open|done|stale|cancelled
        sa.Column("staleness_ms", sa.BigInteger),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("related_decision", ID),
        sa.Column("asserted_by", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("last_status_check_ms", sa.BigInteger),
        sa.Column("nudged_ms", sa.BigInteger),
    ),
)

entities = sa.Table(
    "knowledge_entities",
    metadata,
    *_common(
        sa.Column("channel_id", sa.String(64), nullable=False),  # where first seen
        sa.Column("entity_type", sa.String(16), nullable=False),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("name_key", sa.String(160)),  # extraction.name_key; unique per guild and type
        sa.Column("aliases", sa.JSON, nullable=False),
        sa.Column("user_id", sa.String(64)),  # a person entity that is a member
        sa.Column("meta", sa.JSON, nullable=False),
        sa.Column("first_seen_ms", sa.BigInteger, nullable=False),
        sa.Column("last_mentioned_ms", sa.BigInteger, nullable=False),
        sa.Column("mention_count", sa.Integer, nullable=False),
        sa.Column("deleted", sa.Boolean, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
    ),
    sa.Index("uq_knowledge_entity_key", "guild_id", "entity_type", "name_key", unique=True),
)

entity_keys = sa.Table(
    "knowledge_entity_keys",  # knowledge_0005: every normalised name and alias of an entity
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("entity_type", sa.String(16), primary_key=True),
    sa.Column("key", sa.String(160), primary_key=True),  # extraction.name_key of a name or alias
    sa.Column("entity_id", ID, nullable=False),
    sa.Index("ix_knowledge_entity_keys_entity", "entity_id"),
)

relationships = sa.Table(
    "knowledge_relationships",
    metadata,
    *_common(
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("source_id", ID, nullable=False),
        sa.Column("target_id", ID, nullable=False),
        sa.Column("relationship", sa.String(32), nullable=False),
        sa.Column("context", sa.String(300)),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("first_observed_ms", sa.BigInteger, nullable=False),
        sa.Column("last_observed_ms", sa.BigInteger, nullable=False),
        sa.Column("observation_count", sa.Integer, nullable=False),
        sa.Column("source_ref", sa.JSON, nullable=False),
        sa.Column("extraction_model", sa.String(200)),
    ),
    sa.UniqueConstraint(
        "source_id", "target_id", "relationship", "channel_id", name="uq_knowledge_relationship"
    ),
)

signals = sa.Table(
    "knowledge_signals",
    metadata,
    *_common(
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
    ),
)

embeddings = sa.Table(
    "knowledge_embeddings",
    metadata,
    *_common(
        sa.Column("source_type", sa.String(16), nullable=False),  # decision|signal|summary|entity
        sa.Column("source_id", ID, nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("author_id", sa.String(64)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),  # when the source occurred
        sa.Column("topic_tags", sa.JSON, nullable=False),
        sa.Column("entity_type", sa.String(16)),  # for entity vectors: dedup is per type
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("dims", sa.Integer, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
        # PostgreSQL only (knowledge_0004): the same vector for pgvector's ``<=>``; the
        # column does not exist on SQLite, so statements there never name it
        sa.Column("embedding", PgVector()),
    ),
)

summaries = sa.Table(
    "knowledge_summaries",
    metadata,
    *_common(
        sa.Column("scope_type", sa.String(16), nullable=False),
        sa.Column("scope_id", sa.String(64), nullable=False),
        sa.Column("period_start_ms", sa.BigInteger, nullable=False),
        sa.Column("period_end_ms", sa.BigInteger, nullable=False),
        sa.Column("granularity", sa.String(16), nullable=False),  # daily|weekly|on_demand
        sa.Column("summary", sa.String(4000), nullable=False),
        sa.Column("key_decisions", sa.JSON, nullable=False),
        sa.Column("key_actions", sa.JSON, nullable=False),
        sa.Column("active_topics", sa.JSON, nullable=False),
        sa.Column("participants", sa.JSON, nullable=False),
        sa.Column("sentiment", sa.String(16)),
        sa.Column("message_count", sa.Integer),
        sa.Column("model_version", sa.String(200)),
        sa.Column("generated_ms", sa.BigInteger, nullable=False),
    ),
    sa.UniqueConstraint(
        "guild_id",
        "scope_type",
        "scope_id",
        "granularity",
        "period_start_ms",
        name="uq_knowledge_summary_period",
    ),
)

contradictions = sa.Table(
    "knowledge_contradictions",
    metadata,
    *_common(
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("earlier_id", ID, nullable=False),
        sa.Column("later_id", ID, nullable=False),
        sa.Column("similarity", sa.Float, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),  # open|posted|superseded|dismissed
        sa.Column("posted_message_id", sa.String(64)),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("updated_ms", sa.BigInteger, nullable=False),
    ),
    sa.UniqueConstraint("earlier_id", "later_id", name="uq_knowledge_contradiction"),
)

last_seen = sa.Table(
    "knowledge_last_seen",  # catch-me-up's "since your last message": an id and a time only
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("channel_id", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(64), primary_key=True),
    sa.Column("message_id", sa.String(64), nullable=False),
    sa.Column("seen_ms", sa.BigInteger, nullable=False),
)

ALL = (
    channels,
    decisions,
    actions,
    entities,
    entity_keys,
    relationships,
    signals,
    embeddings,
    summaries,
    contradictions,
    last_seen,
)
