"""A budget window records the highest alert threshold announced (``alerted``: 0, 80, 95, 100).

Revision ID: kernel_0015
Revises: kernel_0014

A percentage only: the staff notice it stands for is posted once per threshold per window,
claimed by a conditional UPDATE on this column.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0015"
down_revision = "kernel_0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("llm_budget_windows") as batch:
        batch.add_column(
            sa.Column("alerted", sa.Integer, nullable=False, server_default=sa.text("0"))
        )


def downgrade() -> None:
    with op.batch_alter_table("llm_budget_windows") as batch:
        batch.drop_column("alerted")
