"""Paused spans are recorded beside secure ones (``channel_secure_ranges.state``).

Revision ID: kernel_0012
Revises: kernel_0011

A backfill (memory's ``/memory sync``, an import) must bring back nothing a channel said while
it was paused, as for secure periods; rows written before this revision are secure spans.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0012"
down_revision = "kernel_0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("channel_secure_ranges") as batch:
        batch.add_column(sa.Column("state", sa.String(16), nullable=False, server_default="secure"))


def downgrade() -> None:
    op.execute("DELETE FROM channel_secure_ranges WHERE state <> 'secure'")
    with op.batch_alter_table("channel_secure_ranges") as batch:
        batch.drop_column("state")
