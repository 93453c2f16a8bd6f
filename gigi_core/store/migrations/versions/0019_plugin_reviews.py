"""Plugin upgrade reviews: actions held back per guild until an admin accepts them.

Revision ID: kernel_0019
Revises: kernel_0018

PLACEHOLDER (session 13 coordination): filled in by the change that owns it, or removed.
"""

revision = "kernel_0019"
down_revision = "kernel_0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
