"""Kernel tables: plugin state, grants, audit events, sealed secrets.

Revision ID: kernel_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0001"
down_revision = None
branch_labels = ("kernel",)
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    tz = sa.DateTime(timezone=True)
    op.create_table(
        "guild_plugins",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("plugin", sa.String(64), primary_key=True),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("allow_external", sa.Boolean, nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("updated_by", sa.String(64)),
        sa.Column("updated_at", tz, nullable=False),
    )
    op.create_table(
        "capability_grants",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("capability", sa.String(128), nullable=False),
        sa.Column("subject_type", sa.String(8), nullable=False),
        sa.Column("subject_id", sa.String(64), nullable=False),
        sa.Column("granted_by", sa.String(64)),
        sa.Column("created_at", tz, nullable=False),
        sa.UniqueConstraint(
            "guild_id", "capability", "subject_type", "subject_id", name="uq_grant"
        ),
    )
    op.create_index("ix_capability_grants_guild_id", "capability_grants", ["guild_id"])
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("actor_id", sa.String(64)),
        sa.Column("guild_id", sa.String(64)),
        sa.Column("channel_id", sa.String(64)),
        sa.Column("action", sa.String(128)),
        sa.Column("capability", sa.String(128)),
        sa.Column("decision", sa.String(16)),
        sa.Column("reason_code", sa.String(64)),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("duration_ms", sa.Float),
        sa.Column("run_id", sa.String(64)),
        sa.Column("step_index", sa.Integer),
    )
    op.create_index("ix_audit_events_created_at", "audit_events", ["created_at"])
    op.create_index("ix_audit_events_guild_id", "audit_events", ["guild_id"])
    op.create_table(
        "sealed_secrets",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("scope", sa.String(32), nullable=False),
        sa.Column("owner", sa.String(160), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("nonce", sa.LargeBinary, nullable=False),
        sa.Column("ciphertext", sa.LargeBinary, nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("updated_at", tz, nullable=False),
        sa.UniqueConstraint("scope", "owner", "name", name="uq_secret"),
    )


def downgrade() -> None:
    for table in ("sealed_secrets", "audit_events", "capability_grants", "guild_plugins"):
        op.drop_table(table)
