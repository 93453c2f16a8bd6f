"""A run step records why a proposed call was refused (``agent_run_steps.reason``).

Revision ID: kernel_0013
Revises: kernel_0012

Metadata only: a reason class (``unknown_tool``, ``not_offered``, ``unparsable``,
``schema_invalid``, ``policy_denied``, ``confirm_rejected`` …) with a sanitised tool name,
a field path or a capability; never argument values or message text.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0013"
down_revision = "kernel_0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_run_steps") as batch:
        batch.add_column(sa.Column("reason", sa.String(160), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_run_steps") as batch:
        batch.drop_column("reason")
