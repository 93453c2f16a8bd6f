"""``since:`` arguments: ``7d``/``24h``/``30m``/``2w`` ago, or an ISO 8601 date or time."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from gigi_core import ToolExecutionError

_REL = re.compile(r"^\s*(\d{1,5})\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str, now: datetime, name: str = "since") -> datetime:
    match = _REL.match(value)
    if match:
        return now - timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ToolExecutionError(
            f"{name}: cannot read that time; use e.g. 7d, 24h, 2026-01-31 or 2026-01-31T09:00"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
