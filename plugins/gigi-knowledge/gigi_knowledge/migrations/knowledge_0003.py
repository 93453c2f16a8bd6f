"""knowledge: each member's last message per channel (its id and time, never its text), so
catch-me-up's "since your last message" survives a restart.

Revision ID: knowledge_0003
"""

import sqlalchemy as sa
from alembic import op

revision = "knowledge_0003"
down_revision = "knowledge_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "knowledge_last_seen",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("seen_ms", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("knowledge_last_seen")
