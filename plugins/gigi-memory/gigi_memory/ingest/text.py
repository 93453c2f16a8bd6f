"""Search text: the words a (redacted) message is found by; redaction itself is re-exported.

``redact`` (``gigi_memory.ingest.redaction``) normalises the text (NFKC, invisible characters
removed), then masks token-shaped strings always and, by the server's ``RedactionRules``,
e-mail addresses, phone numbers and the server's own patterns. It runs before anything is
indexed, sealed or embedded, so a masked value is stored nowhere, not even sealed.

``words`` turns text into the search words both backends index: Unicode NFKC, case-folded,
Discord markup (mentions, channel links, custom emoji, timestamps) and zero-width
characters removed, split into runs of letters, digits and combining marks (so Devanagari
or Thai words keep their vowel signs), every Han/Kana character a word of its own (those
scripts write no spaces), words cut to 100 characters. Emoji and punctuation are not
words. The search text is those words joined by single spaces: FTS5 and PostgreSQL's
``simple`` parser both split it back into exactly the same words, so a count means the
same on SQLite and PostgreSQL, and a query is normalised the same way as the messages.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from gigi_memory.ingest.redaction import (
    DEFAULT_RULES,
    INVISIBLE,
    LABELS,
    MAX_PATTERN_CHARS,
    MAX_PATTERNS,
    MAX_QUERY_CHARS,
    RedactionError,
    RedactionRules,
    check_pattern,
    check_patterns,
    cut_query,
    normalise,
    redact,
    redact_full,
    redact_query,
)

__all__ = [
    "DEFAULT_RULES",
    "LABELS",
    "MAX_PATTERNS",
    "MAX_PATTERN_CHARS",
    "MAX_QUERY_CHARS",
    "RedactionError",
    "RedactionRules",
    "check_pattern",
    "check_patterns",
    "cut_query",
    "normalise",
    "query_words",
    "redact",
    "redact_full",
    "redact_query",
    "search_text",
    "words",
    "words_full",
]

MAX_WORD = 100

# -- search words --------------------------------------------------------------------------

_MARKUP = re.compile(r"<(?:@[!&]?\d+|#\d+|a?:\w{1,64}:\d+|t:-?\d+(?::[tTdDfFR])?|/[\w -]+:\d+)>")
# Zero-width characters, soft hyphens, variation selectors and bidi controls join nothing.
_INVISIBLE = INVISIBLE
_LABELS = re.compile(r"\[(?:token|secret|email|phone|redacted)\]")
_SPACED = re.compile(
    "([\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])"
)


@functools.cache
def _word_pattern() -> re.Pattern[str]:
    """A letter or digit, then letters, digits and combining marks (Mn, Mc) of any script."""
    ranges: list[str] = []
    start = prev = None
    for cp in range(0x20000):  # every combining mark Unicode assigns lies below U+20000
        if unicodedata.category(chr(cp)) in ("Mn", "Mc"):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
            start = None
    if start is not None:
        ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
    marks = "".join(ranges)
    return re.compile(f"[^\\W_](?:[^\\W_]|[{marks}])*")


# ASCII text: NFKC and casefold change nothing but case, nothing is invisible or Han, and
# the words are the runs of [a-z0-9]; one byte table lower-cases and blanks the rest.
_ASCII_WORDS = bytes(c if chr(c).isalnum() and c < 128 else 32 for c in range(256)).lower()


def _ascii_words(text: str) -> list[bytes]:
    if "<" in text:
        text = _MARKUP.sub(" ", text)
    if "[" in text:
        text = _LABELS.sub(" ", text)
    parts = text.encode().translate(_ASCII_WORDS).split()
    if len(text) > MAX_WORD:
        parts = [w[:MAX_WORD] for w in parts]
    return parts


def words(text: str) -> list[str]:
    """The search words of ``text`` (redact first: masked values are never words)."""
    if not text:
        return []
    if text.isascii():
        return [w.decode() for w in _ascii_words(text)]
    return words_full(text)


def words_full(text: str) -> list[str]:
    """``words`` without its ASCII fast path: the one definition, for any script."""
    if not text:
        return []
    text = unicodedata.normalize("NFKC", text)
    text = _MARKUP.sub(" ", text)
    text = _LABELS.sub(" ", text)
    text = _INVISIBLE.sub("", text)
    text = _SPACED.sub(r" \1 ", text.casefold())
    return [w[:MAX_WORD] for w in _word_pattern().findall(text)]


def search_text(text: str) -> str:
    """What the full-text index holds for a (redacted) text: its words, space separated."""
    if text.isascii():
        return b" ".join(_ascii_words(text)).decode()
    return " ".join(words_full(text))


def query_words(text: str, rules: RedactionRules = DEFAULT_RULES) -> list[str]:
    """A count's or a search's text, normalised exactly like stored messages; only its first
    ``MAX_QUERY_CHARS`` (to a space) are read: this redaction runs on the event loop."""
    return words(redact_query(text, rules)[0])
