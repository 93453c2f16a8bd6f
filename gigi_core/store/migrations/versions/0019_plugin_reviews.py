"""Plugin upgrade reviews: actions held back per guild until an admin accepts them.

Revision ID: kernel_0019
Revises: kernel_0018

``gigi upgrade`` records the actions a new plugin version adds or widens
(``plugin_holds``); the policy engine denies them in a guild until an admin accepts that
version there (``plugin_review_accepts``). Names and change labels only.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0019"
down_revision = "kernel_0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plugin_holds",
        sa.Column("plugin", sa.String(64), primary_key=True),
        sa.Column("version", sa.String(64), primary_key=True),
        sa.Column("action", sa.String(200), primary_key=True),
        sa.Column("change", sa.String(500), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "plugin_review_accepts",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("plugin", sa.String(64), primary_key=True),
        sa.Column("version", sa.String(64), primary_key=True),
        sa.Column("accepted_by", sa.String(64), nullable=True),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("plugin_review_accepts")
    op.drop_table("plugin_holds")
