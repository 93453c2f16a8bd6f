"""The windows a model budget counts over: apart from ``budgets`` so the CLI can offer them
without importing SQLAlchemy at start (``tests/test_cold_start.py``)."""

from __future__ import annotations

WINDOWS: tuple[str, ...] = ("daily", "weekly", "monthly")
