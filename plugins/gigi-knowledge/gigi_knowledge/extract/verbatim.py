"""The no-verbatim guard: model output that copies a run of a message's words is not stored.

Knowledge keeps synthesised text only; a model may still echo its input. Everything one
row stores together (all its text fields and tags, joined in order) is compared with the
window's messages after both are normalised (NFKC, case-folded, invisible and format
characters and combining marks removed): a row sharing a run of ``RUN`` consecutive words
with a message, or a message of ``WHOLE`` letters or more whole, is a copy. Words are also
compared with their spacing removed (``SQUASHED`` letters or more), so a copy whose words
were glued together, or split with a zero-width character, a fullwidth letter or across
several tags, is the same copy. One message token is enough when it is a secret's shape
(``TOKEN`` letters and digits or more, mixing both, or a URL with a path, an invite, an
address): a key, an invite code or a link taken from a longer message. The item is then dropped, or stored without the parts that
made it one (``trimmed``), so message text cannot reach a table through the model either.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

RUN = 6
WHOLE = 12  # a short message copied whole: at least this many letters
SQUASHED = 20  # a run compared without its spacing: at least this many letters
TOKEN = 16  # a single message token: at least this many characters
_PREFIX = 8
# A link with something after its host (``discord.gg/abc``, ``https://host/x``) or an address:
# bare host names (``github.com``) are ordinary words; what follows them is the payload.
_SCHEME = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?(?:www\.)?")
_LINK = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://)?[\w-]+(?:\.[\w-]+)+(?::\d+)?[/?#]\S|^[^@\s]+@[\w-]+(?:\.[\w-]+)+$"
)
_EDGE = re.compile(r"^\W+|\W+$")
# Default-ignorable characters that are not of category Cf (fillers, variation selectors).
_IGNORABLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
)


def _kept(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return (
        cat not in ("Cf", "Mn", "Me", "Cc", "Cs", "Co")
        and ch not in _IGNORABLE
        and not (0xE0100 <= ord(ch) <= 0xE01EF)
    )


def _folded(text: str) -> str:
    """Compatibility forms folded, case-folded, accents and invisible characters removed,
    spacing a plain space; punctuation kept (a token's shape needs it)."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    # dropped characters vanish: a zero-width space inside a word leaves the word whole
    return "".join(" " if ch.isspace() else ch for ch in folded if ch.isspace() or _kept(ch))


def normalise(text: str) -> str:
    """The text as compared: ``_folded``, and every non-word character a space."""
    out = (ch if unicodedata.category(ch)[0] in "LNM" else " " for ch in _folded(text))
    return unicodedata.normalize("NFC", "".join(out))


def _alnum(text: str) -> str:
    return unicodedata.normalize(
        "NFC", "".join(ch for ch in text if unicodedata.category(ch)[0] in "LN")
    )


def secret_token(token: str) -> str | None:
    """A folded message token's letters and digits when one copied token is a copy: a key
    (``TOKEN`` or more letters and digits, with both: long words have no digits) or a link
    with a path, an invite or an address of ``TOKEN`` characters or more (its scheme and
    ``www.`` dropped, so a copy without them is found)."""
    token = _EDGE.sub("", token)
    if len(token) < TOKEN:
        return None
    if _LINK.match(token):
        return _alnum(_SCHEME.sub("", token)) or None
    core = _alnum(token)
    if len(core) >= TOKEN and any(c.isdigit() for c in core) and any(c.isalpha() for c in core):
        return core
    return None


def words(text: str) -> list[str]:
    return normalise(text).split()


def _grams(ws: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + RUN]) for i in range(len(ws) - RUN + 1)}


def row_text(parts: Iterable[Any]) -> str:
    """Everything one row stores together as one text: strings and lists of strings, in order."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, list | tuple):
            out.extend(p for p in part if isinstance(p, str))
    return "\n".join(out)


class VerbatimGuard:
    def __init__(self, texts: Iterable[str]) -> None:
        self._grams: set[tuple[str, ...]] = set()
        self._whole: list[str] = []  # short messages, spacing removed
        self._runs: dict[str, list[str]] = {}  # a run's first letters -> runs, spacing removed
        self._tokens: set[str] = set()  # single tokens shaped like secrets, spacing removed
        for text in texts:
            self._tokens.update(filter(None, map(secret_token, _folded(text).split())))
            ws = words(text)
            self._grams |= _grams(ws)
            squashed = "".join(ws)
            if len(squashed) >= WHOLE:
                self._whole.append(squashed)
            for i in range(max(len(ws) - RUN + 1, 0)):
                run = "".join(ws[i : i + RUN])
                if len(run) >= SQUASHED:
                    self._runs.setdefault(run[:_PREFIX], []).append(run)

    def copies(self, value: str | None) -> bool:
        """True when ``value`` (a field, or ``row_text`` of a whole row) copies a message."""
        if not value:
            return False
        ws = words(value)
        if self._grams and not self._grams.isdisjoint(_grams(ws)):
            return True
        squashed = "".join(ws)
        if any(w in squashed for w in self._whole):  # a short message copied whole
            return True
        if any(t in squashed for t in self._tokens):  # a key, link or invite copied
            return True
        if self._runs:
            for i in range(len(squashed) - _PREFIX + 1):
                for run in self._runs.get(squashed[i : i + _PREFIX], ()):
                    if squashed.startswith(run, i):
                        return True
        return False

    def copies_row(self, *parts: Any) -> bool:
        return self.copies(row_text(parts))


def trimmed(guard: VerbatimGuard, item: Any, core: str, extras: dict[str, Any]) -> Any:
    """``item`` with its optional fields ``extras`` (field -> cleaned value) as stored: kept
    when the whole row passes the guard, emptied when together they copy a message (the
    ``core`` field passed on its own). The row's fields are checked as one text, so a run
    split over the summary and its tags is found."""
    values = dict(extras)
    if guard.copies_row(getattr(item, core), *values.values()):
        values = {k: [] if isinstance(v, list) else None for k, v in values.items()}
    return item.model_copy(update=values)
