"""Usage per member and UTC week, kept by the database from the per-member days.

Revision ID: kernel_0024
Revises: kernel_0023

``llm_usage_actor_weeks`` sums ``llm_usage_actor_days`` per guild, week (its Monday, UTC)
and member. Triggers on the daily table apply every insert, update and delete of day rows
to their weeks in the same transaction, so a week is the sum of its days whoever writes
them: this version's fold and privacy paths, and a process of the previous version still
folding or erasing members during a rolling upgrade. The days folded before this revision
are summed into their weeks here. A 90-day report then reads ~12 weeks and at most 13 edge
days per member instead of 90 days (docs/benchmarks.md, the web dashboard pages).
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0024"
down_revision = "kernel_0023"
branch_labels = None
depends_on = None

SUMS = ("calls", "input_tokens", "output_tokens")
EVENTS = ("insert", "update", "delete")
WEEK = {  # the Monday of a day row's week
    "postgresql": "CAST(date_trunc('week', {row}day) AS DATE)",
    "sqlite": "date({row}day, '-6 days', 'weekday 1')",  # back 6 days, on to a Monday
}
KEY = "guild_id, week, actor_id"
COLUMNS = f"{KEY}, {', '.join(SUMS)}"


def _postgres_triggers() -> None:
    """Statement triggers with transition tables: a fold's upsert of thousands of day rows
    changes each week once, by the rows' sums, not once per day row."""
    week = WEEK["postgresql"].format(row="")
    sums = ", ".join(f"SUM({c})" for c in SUMS)

    def grouped(rows: str) -> str:
        return f"SELECT guild_id, {week}, actor_id, {sums} FROM {rows} GROUP BY 1, 2, 3"

    more = ", ".join(f"{c} = w.{c} + excluded.{c}" for c in SUMS)
    less = ", ".join(f"{c} = w.{c} - o.{c}" for c in SUMS)
    match = "w.guild_id = o.guild_id AND w.week = o.week AND w.actor_id = o.actor_id"

    def add(rows: str) -> str:
        return (
            f"INSERT INTO llm_usage_actor_weeks AS w ({COLUMNS}) {grouped(rows)}"
            f" ON CONFLICT ({KEY}) DO UPDATE SET {more};"
        )

    def take(rows: str) -> str:
        old = f"({grouped(rows)}) AS o ({COLUMNS})"
        return (
            f"UPDATE llm_usage_actor_weeks AS w SET {less} FROM {old} WHERE {match};"
            f" DELETE FROM llm_usage_actor_weeks AS w USING {old} WHERE {match}"
            " AND w.calls <= 0;"
        )

    bodies = {
        "insert": (add("added"), "NEW TABLE AS added"),
        "update": (take("removed") + " " + add("added"), "OLD TABLE AS removed NEW TABLE AS added"),
        "delete": (take("removed"), "OLD TABLE AS removed"),
    }
    for event, (body, tables) in bodies.items():
        op.execute(
            f"CREATE FUNCTION llm_usage_actor_weeks_on_{event}() RETURNS trigger"
            f" LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NULL; END $$"
        )
        op.execute(
            f"CREATE TRIGGER llm_usage_actor_days_weeks_{event} AFTER {event.upper()}"
            f" ON llm_usage_actor_days REFERENCING {tables}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION llm_usage_actor_weeks_on_{event}()"
        )


def _sqlite_triggers() -> None:
    """Row triggers (SQLite has no others): each day row changes its week."""

    def key(row: str) -> str:
        week = WEEK["sqlite"].format(row=f"{row}.")
        return f"guild_id = {row}.guild_id AND week = {week} AND actor_id = {row}.actor_id"

    less = ", ".join(f"{c} = {c} - OLD.{c}" for c in SUMS)
    take = (
        f"UPDATE llm_usage_actor_weeks SET {less} WHERE {key('OLD')};"
        f" DELETE FROM llm_usage_actor_weeks WHERE {key('OLD')} AND calls <= 0;"
    )
    more = ", ".join(f"{c} = llm_usage_actor_weeks.{c} + excluded.{c}" for c in SUMS)
    new = ", ".join(f"NEW.{c}" for c in SUMS)
    add = (
        f"INSERT INTO llm_usage_actor_weeks ({COLUMNS}) VALUES (NEW.guild_id,"
        f" {WEEK['sqlite'].format(row='NEW.')}, NEW.actor_id, {new})"
        f" ON CONFLICT ({KEY}) DO UPDATE SET {more};"
    )
    for event, body in zip(EVENTS, (add, f"{take} {add}", take), strict=True):
        op.execute(
            f"CREATE TRIGGER llm_usage_actor_days_weeks_{event}"
            f" AFTER {event.upper()} ON llm_usage_actor_days BEGIN {body} END"
        )


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
    postgres = op.get_bind().dialect.name == "postgresql"
    week = WEEK["postgresql" if postgres else "sqlite"].format(row="")
    op.execute(
        f"INSERT INTO llm_usage_actor_weeks ({COLUMNS})"
        f" SELECT guild_id, {week}, actor_id, SUM(calls), SUM(input_tokens), SUM(output_tokens)"
        f" FROM llm_usage_actor_days GROUP BY guild_id, {week}, actor_id"
    )
    if postgres:
        _postgres_triggers()
    else:
        _sqlite_triggers()


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for event in EVENTS:
        op.execute(
            f"DROP TRIGGER llm_usage_actor_days_weeks_{event}"
            + (" ON llm_usage_actor_days" if postgres else "")
        )
        if postgres:
            op.execute(f"DROP FUNCTION llm_usage_actor_weeks_on_{event}()")
    op.drop_table("llm_usage_actor_weeks")
