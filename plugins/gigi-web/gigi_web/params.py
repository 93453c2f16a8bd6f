"""Whole numbers from query strings and forms: ASCII digits only and within a bound, since
``str.isdigit`` also passes "²" or "٣" that ``int`` then refuses or reads unexpectedly."""

from __future__ import annotations

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
