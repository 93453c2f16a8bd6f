"""knowledge: a thread's parent channel beside its knowledge settings.

Revision ID: knowledge_0007

A thread inherits its parent's observation state (paused, secure) everywhere; the jobs that
post (staleness nudges, contradiction notes) run where no message is at hand, so the parent
seen on the thread's messages is kept here (``observe`` records it).
"""

import sqlalchemy as sa
from alembic import op

revision = "knowledge_0007"
down_revision = "knowledge_0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("knowledge_channels", sa.Column("parent_id", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("knowledge_channels", "parent_id")
