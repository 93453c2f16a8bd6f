"""Usage per member and UTC week, filled from the per-member days already folded.

Revision ID: kernel_0024
Revises: kernel_0023

``llm_usage_actor_weeks`` sums ``llm_usage_actor_days`` per guild, week (its Monday, UTC)
and member. The fold writes both in one transaction from now on; the days a store folded
before this revision are summed into their weeks here, in the migration's transaction, so
the weekly rows hold exactly the events up to the watermark, each once. A 90-day report
then reads ~12 weeks and at most 13 edge days per member instead of 90 days
(docs/benchmarks.md, the web dashboard pages).
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0024"
down_revision = "kernel_0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_usage_actor_weeks",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("week", sa.Date, primary_key=True),
        sa.Column("actor_id", sa.String(64), primary_key=True),
        sa.Column("calls", sa.BigInteger, nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False),
        sa.Column("output_tokens", sa.BigInteger, nullable=False),
        sqlite_with_rowid=False,  # stored in key order: a guild's weeks are one range read
    )
    # A fold still running in another process commits first (it holds this row), so the
    # sum below sees its days: the fold's own lock, as in ``hold_watermark``.
    op.execute("UPDATE llm_usage_actor_watermark SET last_event_id = last_event_id WHERE id = 1")
    if op.get_bind().dialect.name == "postgresql":
        week = "CAST(date_trunc('week', day) AS DATE)"
    else:  # back six days, then forward to the next Monday (the same day if one)
        week = "date(day, '-6 days', 'weekday 1')"
    op.execute(
        "INSERT INTO llm_usage_actor_weeks"
        " (guild_id, week, actor_id, calls, input_tokens, output_tokens)"
        f" SELECT guild_id, {week}, actor_id, SUM(calls), SUM(input_tokens), SUM(output_tokens)"
        f" FROM llm_usage_actor_days GROUP BY guild_id, {week}, actor_id"
    )


def downgrade() -> None:
    op.drop_table("llm_usage_actor_weeks")
