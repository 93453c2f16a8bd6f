"""Shared rate limits and turns: the per-member run limit holds across processes, and
gateway IDENTIFYs are spaced across processes.

Revision ID: kernel_0008
Revises: kernel_0007
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0008"
down_revision = "kernel_0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gigi_rate_buckets",
        sa.Column("scope", sa.String(64), primary_key=True),
        sa.Column("key_hash", sa.String(64), primary_key=True),
        sa.Column("window", sa.BigInteger, primary_key=True),
        sa.Column("hits", sa.Integer, nullable=False),
    )
    op.create_table(
        "gigi_turns",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("last_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("gigi_turns")
    op.drop_table("gigi_rate_buckets")
