"""memory: backfill checkpoints, one per channel being (or last) synced from its history,
and erasure marks, so a sync or an import never brings back what a member had deleted.

Revision ID: memory_0003

A ``/memory sync`` job pages the channel's history newest first; after every page it writes
the cursor (the oldest message id seen) and its counts here, so a restart resumes from the
cursor and never inserts a message twice (message ids are unique per guild anyway).
"""

import sqlalchemy as sa
from alembic import op

revision = "memory_0003"
down_revision = "memory_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_backfills",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), primary_key=True),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
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

    op.create_table(
        "memory_erasures",  # a member's keyed pseudonym, never their id
        sa.Column("guild_id", sa.String(64), primary_key=True),  # "*": every guild
        sa.Column("author_key", sa.String(64), primary_key=True),
        sa.Column("erased_ms", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("memory_erasures")
    op.drop_table("memory_backfills")
