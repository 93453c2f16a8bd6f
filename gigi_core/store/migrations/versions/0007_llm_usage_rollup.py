"""The usage rollup: reports read one row per day (or hour) and key instead of every call.

Revision ID: kernel_0007
Revises: kernel_0006

``llm_usage_rollup`` sums ``llm_usage_events`` per guild, UTC day and UTC hour, provider,
model, purpose and status; the LLM service keeps it in the same transaction as the events
it writes. This revision back-fills it from the events already stored (events without a
guild are in no guild's report, so they are not summed), and indexes events by guild and
time for the first partial hour of a report with ``--since``.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0007"
down_revision = "kernel_0006"
branch_labels = None
depends_on = None

KEYS = ("provider", "model", "purpose", "status")
TOKENS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")


def _bucket(period: str, dialect: str) -> str:
    """The start of the event's UTC day or hour, stored as the ORM stores a datetime."""
    if dialect == "postgresql":
        return f"date_trunc('{period}', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
    # SQLite keeps UTC wall-clock text, 'YYYY-MM-DD HH:MM:SS.ffffff' (SQLAlchemy's format).
    hour = "00" if period == "day" else "%H"
    return f"strftime('%Y-%m-%d {hour}:00:00.000000', created_at)"


def upgrade() -> None:
    op.create_table(
        "llm_usage_rollup",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("period", sa.String(4), primary_key=True),
        sa.Column("bucket", sa.DateTime(timezone=True), primary_key=True),
        sa.Column("provider", sa.String(64), primary_key=True),
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("purpose", sa.String(16), primary_key=True),
        sa.Column("status", sa.String(16), primary_key=True),
        sa.Column("calls", sa.BigInteger, nullable=False),
        *(sa.Column(name, sa.BigInteger, nullable=False) for name in TOKENS),
        sqlite_with_rowid=False,  # stored in key order: a guild's days are one range read
    )
    op.create_index(
        "ix_llm_usage_events_guild_created", "llm_usage_events", ["guild_id", "created_at"]
    )
    dialect = op.get_context().dialect.name
    keys = ", ".join(KEYS)
    sums = ", ".join(f"COALESCE(SUM({t}), 0)" for t in TOKENS)
    for period in ("day", "hour"):
        bucket = _bucket(period, dialect)
        op.execute(
            f"INSERT INTO llm_usage_rollup (guild_id, period, bucket, {keys}, calls, "
            f"{', '.join(TOKENS)}) "
            f"SELECT guild_id, '{period}', {bucket}, {keys}, COUNT(*), {sums} "
            f"FROM llm_usage_events WHERE guild_id IS NOT NULL "
            f"GROUP BY guild_id, {bucket}, {keys}"
        )


def downgrade() -> None:
    op.drop_index("ix_llm_usage_events_guild_created", table_name="llm_usage_events")
    op.drop_table("llm_usage_rollup")
