"""ambient: a pictures counter, and the history a server chose to keep (``persist_history``).

Revision ID: ambient_0002

History rows hold ids, a role and a time in the clear (what privacy erasure and retention
need) and the message text sealed with the kernel's state key; they exist only for servers
that turned ``persist_history`` on, and only until their retention.
"""

import sqlalchemy as sa
from alembic import op

revision = "ambient_0002"
down_revision = "ambient_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "ambient_daily", sa.Column("pictures", sa.Integer, nullable=False, server_default="0")
    )
    op.create_table(
        "ambient_history",
        sa.Column("key", sa.String(32), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("author_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("nonce", sa.LargeBinary, nullable=False),
        sa.Column("sealed", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_ambient_history_guild_seq", "ambient_history", ["guild_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_ambient_history_guild_seq", "ambient_history")
    op.drop_table("ambient_history")
    op.drop_column("ambient_daily", "pictures")
