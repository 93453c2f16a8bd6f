"""Per-guild plugin state records the distribution that saved it.

Revision ID: kernel_0006
Revises: kernel_0005

A plugin that reuses another plugin's name must not inherit its enablement or sealed
config: rows are bound to the distribution (NULL for rows written before this revision;
``Kernel.open`` binds those to the plugin of that name it loads first).
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0006"
down_revision = "kernel_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("guild_plugins") as batch:
        batch.add_column(sa.Column("distribution", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("guild_plugins") as batch:
        batch.drop_column("distribution")
