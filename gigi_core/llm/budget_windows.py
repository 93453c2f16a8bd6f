"""The windows a model budget counts over and where each starts and ends: apart from
``budgets`` so the CLI can offer them without importing SQLAlchemy at start
(``tests/test_cold_start.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

WINDOWS: tuple[str, ...] = ("daily", "weekly", "monthly")


def window_start(window: str, reset_hour: int, now: datetime) -> datetime:
    """The start of the window ``now`` falls in: the last reset at ``reset_hour`` UTC of a
    day (daily), a Monday (weekly) or the 1st of a month (monthly)."""
    now = now.astimezone(UTC)
    start = now.replace(hour=reset_hour, minute=0, second=0, microsecond=0)
    if window == "daily":
        return start if start <= now else start - timedelta(days=1)
    if window == "weekly":
        start -= timedelta(days=start.weekday())
        return start if start <= now else start - timedelta(days=7)
    start = start.replace(day=1)
    if start <= now:
        return start
    return _add_month(start, -1)


def next_start(window: str, start: datetime) -> datetime:
    """When the window that began at ``start`` ends (the next reset)."""
    if window == "daily":
        return start + timedelta(days=1)
    if window == "weekly":
        return start + timedelta(days=7)
    return _add_month(start, 1)


def _add_month(when: datetime, months: int) -> datetime:
    index = when.year * 12 + when.month - 1 + months
    return when.replace(year=index // 12, month=index % 12 + 1)
