"""Fixtures for the Discord tests; the simulated server itself is ``discord_world``."""

from __future__ import annotations

from gigi_core.testing.backends import database_url, isolated_env, postgres_server  # noqa: F401
