"""Provider failover lists per owner and purpose; model catalogue cache.

Revision ID: kernel_0020
Revises: kernel_0019

PLACEHOLDER (session 13 coordination): filled in by the change that owns it, or removed.
"""

revision = "kernel_0020"
down_revision = "kernel_0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
