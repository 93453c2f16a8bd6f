"""Money budgets: prices on profiles, budget units.

Revision ID: kernel_0018
Revises: kernel_0017

PLACEHOLDER (session 13 coordination): filled in by the change that owns it, or removed.
"""

revision = "kernel_0018"
down_revision = "kernel_0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
