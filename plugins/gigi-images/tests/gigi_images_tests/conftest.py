"""Fixtures: both store backends (usage rows and budgets are stored)."""

from __future__ import annotations

from gigi_core.testing import backends
from gigi_core.testing.backends import isolated_env  # noqa: F401  (autouse)

database_url = backends.database_url
postgres_server = backends.postgres_server
