"""LLM budgets: per guild, member, channel, role or provider/model, with window counters.

Revision ID: kernel_0014
Revises: kernel_0013

Counters only (spent and reserved tokens per window): no prompts, no message text.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0014"
down_revision = "kernel_0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_budgets",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("scope_kind", sa.String(8), nullable=False),
        sa.Column("scope_id", sa.String(200), nullable=False),
        sa.Column("unit", sa.String(8), nullable=False),
        sa.Column("limit", sa.BigInteger, nullable=False),
        sa.Column("window", sa.String(8), nullable=False),
        sa.Column("reset_hour", sa.Integer, nullable=False),
        sa.Column("exempt_roles", sa.JSON, nullable=False),
        sa.Column("exempt_admins", sa.Boolean, nullable=False),
        sa.Column("updated_by", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "uq_llm_budgets_scope",
        "llm_budgets",
        ["guild_id", "scope_kind", "scope_id", "unit", "window"],
        unique=True,
    )
    op.create_table(
        "llm_budget_windows",
        sa.Column("budget_id", sa.String(32), primary_key=True),
        sa.Column("subject", sa.String(64), primary_key=True),
        sa.Column("starts", sa.BigInteger, primary_key=True),
        sa.Column("spent", sa.BigInteger, nullable=False),
        sa.Column("reserved", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("llm_budget_windows")
    op.drop_index("uq_llm_budgets_scope", table_name="llm_budgets")
    op.drop_table("llm_budgets")
