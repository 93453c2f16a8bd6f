"""Budget leases, prices on model profiles, and a profile's budget fallback model.

Revision ID: kernel_0018
Revises: kernel_0017

``llm_budget_leases``: a process's share of a budget window, counted in the window's
``reserved``; ``expires`` lets another process reclaim the share of a crashed one.
``llm_model_profiles`` gains prices per million input / output tokens and their currency
(what money budgets count in; a money budget's ``currency`` on ``llm_budgets``, its
amounts in millionths of it) and ``budget_fallback_model``, the cheaper model on the same
credential that answers once a budget is spent. Numbers and names only.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0018"
down_revision = "kernel_0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_budget_leases",
        sa.Column("budget_id", sa.String(32), primary_key=True),
        sa.Column("subject", sa.String(64), primary_key=True),
        sa.Column("starts", sa.BigInteger, primary_key=True),
        sa.Column("holder", sa.String(48), primary_key=True),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("expires", sa.BigInteger, nullable=False),
    )
    with op.batch_alter_table("llm_budgets") as batch:
        batch.add_column(sa.Column("currency", sa.String(8), nullable=True))
    with op.batch_alter_table("llm_model_profiles") as batch:
        batch.add_column(sa.Column("input_price", sa.Float, nullable=True))
        batch.add_column(sa.Column("output_price", sa.Float, nullable=True))
        batch.add_column(sa.Column("currency", sa.String(8), nullable=True))
        batch.add_column(sa.Column("budget_fallback_model", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("llm_model_profiles") as batch:
        batch.drop_column("budget_fallback_model")
        batch.drop_column("currency")
        batch.drop_column("output_price")
        batch.drop_column("input_price")
    with op.batch_alter_table("llm_budgets") as batch:
        batch.drop_column("currency")
    op.drop_table("llm_budget_leases")
