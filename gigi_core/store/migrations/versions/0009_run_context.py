"""The context pack of each agent run: its trace for /agent trace, its restore state.

Revision ID: kernel_0009
Revises: kernel_0008
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0009"
down_revision = "kernel_0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_run_context",
        sa.Column("run_id", sa.String(32), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=False),
        sa.Column("trace_json", sa.Text, nullable=False),
        sa.Column("state_json", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_agent_run_context_guild_id", "agent_run_context", ["guild_id"])


def downgrade() -> None:
    op.drop_index("ix_agent_run_context_guild_id", "agent_run_context")
    op.drop_table("agent_run_context")
