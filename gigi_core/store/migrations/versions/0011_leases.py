"""Leases for several processes on one database: each agent run's owner and lease (every
durable write of a run is conditional on its owner), and gateway shard leases.

Revision ID: kernel_0011
Revises: kernel_0010
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0011"
down_revision = "kernel_0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agent_runs", sa.Column("owner", sa.String(64)))
    op.add_column("agent_runs", sa.Column("lease_until", sa.Float))
    op.create_table(
        "gigi_shard_leases",
        sa.Column("pool", sa.String(64), primary_key=True),
        sa.Column("shard_id", sa.Integer, primary_key=True),
        sa.Column("shard_count", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("claimed_at", sa.Float, nullable=False),
    )
    op.create_table(
        "gigi_shard_members",
        sa.Column("pool", sa.String(64), primary_key=True),
        sa.Column("owner", sa.String(64), primary_key=True),
        sa.Column("lease_until", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("gigi_shard_members")
    op.drop_table("gigi_shard_leases")
    with op.batch_alter_table("agent_runs") as batch:
        batch.drop_column("lease_until")
        batch.drop_column("owner")
