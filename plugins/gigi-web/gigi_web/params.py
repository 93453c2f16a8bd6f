"""Whole numbers and ids from query strings and forms: ASCII digits only and within a bound,
since ``str.isdigit`` also passes "²" or "٣" that ``int`` then refuses or reads unexpectedly."""

from __future__ import annotations

import re
from typing import Any

from gigi_web.access import Refused

ASCII_DIGITS = frozenset("0123456789")


def ascii_int(text: str, low: int, high: int) -> int | None:
    """``text`` as a whole number from ``low`` to ``high``, or None (any other text)."""
    if not text or len(text) > len(str(high)) or not set(text) <= ASCII_DIGITS:
        return None
    value = int(text)
    return value if low <= value <= high else None


def query_int(text: str | None, name: str, low: int, high: int, default: int | None) -> int | None:
    """A query parameter's number, ``default`` when it is absent or blank; else a 400
    naming the parameter and what it takes."""
    if text is None or not text.strip():
        return default
    value = ascii_int(text.strip(), low, high)
    if value is None:
        raise Refused(
            400, f"The {name} parameter takes a whole number from {low} to {high} (digits 0-9)."
        )
    return value


# Ids in forms: a Discord id (a snowflake) and a record id (a uuid4 as the plugins store it).
SNOWFLAKE = re.compile(r"[0-9]{1,20}", re.ASCII)
RECORD_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.ASCII)
ID_TEXT = {SNOWFLAKE: "a Discord id (digits 0-9, at most 20)", RECORD_ID: "a record id as listed"}


def form_id(form: Any, name: str, label: str, pattern: re.Pattern[str] = SNOWFLAKE) -> str:
    """A form field holding one id, checked whole (never cut to fit): else a 400 naming
    the field and what it takes."""
    value = form.get(name)
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise Refused(400, f"{label} ({name}) is missing: it takes {ID_TEXT[pattern]}.")
    if len(text) > 64 or not pattern.fullmatch(text):
        raise Refused(400, f"{label} ({name}) is not valid: it takes {ID_TEXT[pattern]}.")
    return text
