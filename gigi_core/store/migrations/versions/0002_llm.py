"""LLM tables: credentials, model profiles, guild policies, usage events.

Revision ID: kernel_0002
Revises: kernel_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0002"
down_revision = "kernel_0001"
branch_labels = None
depends_on = None

ACTIVE = sa.text("revoked_at IS NULL")


def upgrade() -> None:
    tz = sa.DateTime(timezone=True)
    op.create_table(
        "llm_credentials",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("owner_type", sa.String(8), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("label", sa.String(64), nullable=False),
        sa.Column("base_url", sa.String(500)),
        sa.Column("key_id", sa.String(32)),
        sa.Column("nonce", sa.LargeBinary),
        sa.Column("ciphertext", sa.LargeBinary),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("last_test_status", sa.String(16)),
        sa.Column("last_tested_at", tz),
        sa.Column("last_error_class", sa.String(32)),
        sa.Column("created_by", sa.String(64)),
        sa.Column("updated_by", sa.String(64)),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("updated_at", tz, nullable=False),
        sa.Column("revoked_at", tz),
    )
    op.create_index("ix_llm_credentials_owner", "llm_credentials", ["owner_type", "owner_id"])
    op.create_index(
        "uq_llm_credentials_active_label",
        "llm_credentials",
        ["owner_type", "owner_id", "label"],
        unique=True,
        sqlite_where=ACTIVE,
        postgresql_where=ACTIVE,
    )
    op.create_table(
        "llm_model_profiles",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("owner_type", sa.String(8), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column(
            "credential_id", sa.String(32), sa.ForeignKey("llm_credentials.id"), nullable=False
        ),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("fallback_model", sa.String(200)),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("selected_by", sa.String(64)),
        sa.Column("updated_at", tz, nullable=False),
        sa.UniqueConstraint("owner_type", "owner_id", "purpose", name="uq_llm_profile"),
    )
    op.create_table(
        "llm_guild_policies",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("personal_keys", sa.String(16), nullable=False),
        sa.Column("tenant_fallback", sa.Boolean, nullable=False),
        sa.Column("updated_by", sa.String(64)),
        sa.Column("updated_at", tz, nullable=False),
    )
    op.create_table(
        "llm_usage_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("actor_id", sa.String(64)),
        sa.Column("guild_id", sa.String(64)),
        sa.Column("channel_id", sa.String(64)),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("billing_owner_type", sa.String(8), nullable=False),
        sa.Column("billing_owner_id", sa.String(64), nullable=False),
        sa.Column("input_tokens", sa.Integer),
        sa.Column("output_tokens", sa.Integer),
        sa.Column("reasoning_tokens", sa.Integer),
        sa.Column("cached_tokens", sa.Integer),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_class", sa.String(32)),
        sa.Column("latency_ms", sa.Float),
        sa.Column("created_at", tz, nullable=False),
    )
    op.create_index("ix_llm_usage_events_guild_id", "llm_usage_events", ["guild_id"])
    op.create_index("ix_llm_usage_events_created_at", "llm_usage_events", ["created_at"])


def downgrade() -> None:
    for table in (
        "llm_usage_events",
        "llm_guild_policies",
        "llm_model_profiles",
        "llm_credentials",
    ):
        op.drop_table(table)
