"""Per-place (guild, category, channel, forum, thread) and per-role LLM policies.

Revision ID: kernel_0017
Revises: kernel_0016

A place's model override per purpose, its admins' extra instructions and when Gigi
answers there; a role's allowed models. Ids and settings only: no member messages.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0017"
down_revision = "kernel_0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_place_policies",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("place_id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("models", sa.JSON, nullable=False),
        sa.Column("prompt", sa.Text, nullable=True),
        sa.Column("answer", sa.String(8), nullable=True),
        sa.Column("updated_by", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "llm_role_policies",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("role_id", sa.String(64), primary_key=True),
        sa.Column("models", sa.JSON, nullable=False),
        sa.Column("updated_by", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("llm_role_policies")
    op.drop_table("llm_place_policies")
