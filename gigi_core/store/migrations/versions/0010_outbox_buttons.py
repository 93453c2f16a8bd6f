"""The buttons under messages plugins post through ``kernel.outbox``.

Revision ID: kernel_0010
Revises: kernel_0009
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0010"
down_revision = "kernel_0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gigi_outbox_buttons",
        sa.Column("token", sa.String(32), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("plugin", sa.String(128), nullable=False),
        sa.Column("command", sa.String(200), nullable=False),
        sa.Column("arguments", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_gigi_outbox_buttons_expires", "gigi_outbox_buttons", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_gigi_outbox_buttons_expires", "gigi_outbox_buttons")
    op.drop_table("gigi_outbox_buttons")
