"""A flag on credentials whose base URL must stay public at every call.

Revision ID: kernel_0022
Revises: kernel_0021

``llm_credentials.url_checked``: the key was added from a chat surface or the web by a
member or a guild admin (not the operator), so its base URL was checked when it was added
and its host is resolved and checked again each time a call connects (DNS can change).
Existing rows keep false: they were added before the flag existed.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0022"
down_revision = "kernel_0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("llm_credentials") as batch:
        batch.add_column(
            sa.Column("url_checked", sa.Boolean, nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("llm_credentials") as batch:
        batch.drop_column("url_checked")
