"""Personal keys: each member's remembered billing choice per guild (``server`` or ``me``)
and their acknowledgement that guild context may go to their own provider.

Revision ID: kernel_0016
Revises: kernel_0015

Two small tables keyed by (guild, member); metadata only, removed by privacy delete.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0016"
down_revision = "kernel_0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_billing_choices",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("billing", sa.String(8), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "llm_context_disclosures",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("llm_context_disclosures")
    op.drop_table("llm_billing_choices")
