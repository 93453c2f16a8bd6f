"""Background jobs: the kernel's job records and the last fired tick of each schedule.

Revision ID: kernel_0005
Revises: kernel_0004

On PostgreSQL the job engine's own tables (pgqueuer) live in the ``gigi_pgqueuer``
schema and are installed and upgraded by pgqueuer itself, not here.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0005"
down_revision = "kernel_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    tz = sa.DateTime(timezone=True)
    op.create_table(
        "gigi_jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("key", sa.String(200)),
        sa.Column("key_lock", sa.String(200)),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("retries", sa.Integer, nullable=False),
        sa.Column("run_at", tz, nullable=False),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("started_at", tz),
        sa.Column("finished_at", tz),
        sa.Column("heartbeat_at", tz),
        sa.Column("worker", sa.String(128)),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("progress_done", sa.Integer),
        sa.Column("progress_total", sa.Integer),
        sa.Column("progress_note", sa.String(200)),
        sa.Column("error_class", sa.String(128)),
        sa.Column("engine_ref", sa.BigInteger),
        sa.UniqueConstraint("name", "key_lock", name="uq_gigi_jobs_key_lock"),
    )
    op.create_index("ix_gigi_jobs_due", "gigi_jobs", ["status", "name", "run_at"])
    op.create_index("ix_gigi_jobs_created_at", "gigi_jobs", ["created_at"])
    op.create_table(
        "gigi_job_schedules",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("schedule", sa.String(128), nullable=False),
        sa.Column("last_tick", tz, nullable=False),
        sa.Column("updated_at", tz, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("gigi_job_schedules")
    op.drop_index("ix_gigi_jobs_created_at", "gigi_jobs")
    op.drop_index("ix_gigi_jobs_due", "gigi_jobs")
    op.drop_table("gigi_jobs")
