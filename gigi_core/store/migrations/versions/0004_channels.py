"""Channel observation states, recorded secure ranges, per-plugin event delivery counters.

Revision ID: kernel_0004
Revises: kernel_0003
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0004"
down_revision = "kernel_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    tz = sa.DateTime(timezone=True)
    op.create_table(
        "channel_observation",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("updated_by", sa.String(64)),
        sa.Column("updated_at", tz, nullable=False),
    )
    op.create_table(
        "channel_secure_ranges",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("started_at", tz, nullable=False),
        sa.Column("ended_at", tz),
        sa.Column("started_by", sa.String(64)),
    )
    op.create_index("ix_channel_secure_ranges_guild_id", "channel_secure_ranges", ["guild_id"])
    op.create_table(
        "observer_stats",
        sa.Column("plugin", sa.String(64), primary_key=True),
        sa.Column("delivered", sa.Integer, nullable=False),
        sa.Column("dropped", sa.Integer, nullable=False),
        sa.Column("failed", sa.Integer, nullable=False),
        sa.Column("timed_out", sa.Integer, nullable=False),
        sa.Column("updated_at", tz, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("observer_stats")
    op.drop_table("channel_secure_ranges")
    op.drop_table("channel_observation")
