"""The manner of everything this plugin says itself ("Jeeves"): no
exclamation marks, "I'm afraid" not "sorry", "Shall I" not "Do you want me to", "One notes
that" when pointing out a difference; citations name the channel and an approximate date,
never a quotation. Model-written text posted in these notes is calmed (``calm``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

NO_RECORD = "I'm afraid I have no record of that particular matter."
NOTHING_SINCE = "I'm afraid I have no record of anything here since then."
# Shown in the context pack (the user's turn) when a knowledge item is there to answer from.
ANSWER_NOTES = (
    "Cite each item by its channel and approximate date (in #design, around 24 November); "
    "never quote anyone's words. No exclamation marks; regret with I'm afraid; offer "
    "with Shall I; point out a difference with One notes that."
)
_BANG = re.compile(r"\s*!+")
_RUDE = re.compile(r"\b(sorry|do you want me to|oops)\b", re.I)


def calm(text: str) -> str:
    """``text`` without exclamation marks (a model's "Ship it!" becomes "Ship it.")."""
    out = _BANG.sub(".", text)
    return re.sub(r"\.{2,}", ".", out).replace(".,", ",").replace(".?", "?")


def bare(name: str) -> str:
    """A name without exclamation marks (nothing put in their place)."""
    return " ".join(name.replace("!", " ").split())


def lapses(text: str) -> list[str]:
    """What in ``text`` breaks the manner (for tests and checks); empty when it is in order."""
    found = ["exclamation mark"] if "!" in text else []
    found += [m.group(0).lower() for m in _RUDE.finditer(text)]
    return found


def clause(text: str) -> str:
    """A model's sentence as a clause after "undertook to": no final stop, and a first
    capital lowered unless it starts a name or an acronym (``API``)."""
    text = calm(text).strip().rstrip(".")
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def approximately(ms: int, now_ms: int) -> str:
    """An approximate date: "today", "yesterday", "on Monday" within a week, else
    "around 24 November" (with the year when it is not this year's)."""
    when = datetime.fromtimestamp(ms / 1000, UTC)
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    days = (now.date() - when.date()).days
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if 1 < days < 7:
        return f"on {when:%A}"
    year = "" if when.year == now.year else f" {when.year}"
    return f"around {when.day} {when:%B}{year}"
