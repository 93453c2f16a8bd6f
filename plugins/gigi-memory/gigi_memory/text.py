"""Redaction and search text: what of a message may be stored, and the words it is found by.

``redact`` masks token-shaped strings (API keys, bot tokens, JWTs, long random strings,
``password=...`` values) always, and by the server's ``RedactionRules`` e-mail addresses,
phone numbers (both on by default) and the server's own patterns. It runs before anything
is indexed, sealed or embedded, so a masked value is stored nowhere, not even sealed.

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
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

MAX_WORD = 100

# -- redaction -----------------------------------------------------------------------------

_TOKENS = [
    r"[MNO][A-Za-z\d_-]{23,27}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,40}",  # Discord bot token
    r"sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}",  # OpenAI, Anthropic, Stripe
    r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",  # GitHub
    r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"AKIA[0-9A-Z]{16}",  # AWS access key id
    r"AIza[0-9A-Za-z_-]{35}",  # Google API key
    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
    # 32+ characters mixing letters and digits: keys, secrets, digests.
    r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}"
    r"(?![A-Za-z0-9_-])",
]
_ASSIGNED = (
    r"(?i:\b(?:bearer|password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)"
    r"(?:\s*[:=]\s*|\s+))(?P<value>[^\s'\"]{6,})"
)
_EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_PHONE = r"(?<![\w+.])\+?\(?\d[\d ().-]{6,}\d(?![\w.]*\d)"
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")

LABELS = {
    "token": "[token]",
    "assigned": "[secret]",
    "email": "[email]",
    "phone": "[phone]",
    "custom": "[redacted]",
}
MAX_PATTERNS = 20
MAX_PATTERN_CHARS = 200


def _backtracking(pattern: str) -> str | None:
    """Why ``pattern`` could backtrack for seconds on a crafted 4,000-character message.

    Python's ``re`` has no timeout, so admins' rules are kept to shapes whose cost is bounded:
    no repeated group (``((a)+)+``, ``(a|a)*``), and the product of the repeats' ranges (an
    unbounded ``*``/``+``/``{n,}`` counts as the longest message) at most ``REPEAT_BUDGET``:
    one unbounded repeat, or two ``{0,64}``, but not ``\\w+\\w+``.
    """
    in_class, after_group, i = False, False, 0
    product = 1
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i, after_group = i + 2, False
            continue
        if in_class:
            in_class = ch != "]"
            i += 1
            continue
        width = 1
        if ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":  # "[]...]" starts with a literal ]
                i += 1
        elif ch in "*+?" and pattern[i - 1 : i] not in ("*", "+", "?", "}"):  # not a lazy mark
            width = 2 if ch == "?" else MAX_MESSAGE_CHARS
        elif ch == "{" and (m := _BRACES.match(pattern, i)):
            high = m.group(2)  # None: {n}; "": {n,}; digits: {n,m}
            low = int(m.group(1) or 0)
            width = MAX_MESSAGE_CHARS if high == "" else (int(high) - low + 1 if high else 1)
            i = m.end() - 1
        if width > 1 and after_group:
            return "a repeated group"
        product *= max(width, 1)
        if product > REPEAT_BUDGET:
            return "repeats that multiply (like \\w+\\w+ or three {0,64})"
        after_group = ch == ")"
        i += 1
    return None


MAX_MESSAGE_CHARS = 4_000
REPEAT_BUDGET = 10_000
_BRACES = re.compile(r"\{(\d*)(?:,(\d*))?\}")


@dataclass(frozen=True)
class RedactionRules:
    """A server's redaction: tokens and secrets always; e-mails, phones and own patterns."""

    emails: bool = True
    phones: bool = True
    patterns: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"emails": self.emails, "phones": self.phones, "patterns": list(self.patterns)}

    def to_json(self) -> str | None:
        return None if self == DEFAULT_RULES else json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | None) -> RedactionRules:
        """Stored rules; anything unreadable falls back to the defaults (never to less)."""
        if not raw:
            return DEFAULT_RULES
        try:
            data = json.loads(raw)
            return cls(
                emails=bool(data.get("emails", True)),
                phones=bool(data.get("phones", True)),
                patterns=tuple(p for p in data.get("patterns", ()) if check_pattern(p) is None),
            )
        except (ValueError, TypeError, AttributeError):
            return DEFAULT_RULES


DEFAULT_RULES = RedactionRules()


def check_pattern(pattern: Any) -> str | None:
    """Why a server's own pattern is refused (None: it is fine)."""
    if not isinstance(pattern, str) or not pattern.strip():
        return "a pattern must be a non-empty string"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"a pattern has at most {MAX_PATTERN_CHARS} characters"
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression ({exc.msg} at position {exc.pos})"
    if re.search(r"\(\?P|\\\d|\(\?\(", pattern):
        return "named groups, backreferences and conditionals are not allowed"
    if (why := _backtracking(pattern)) is not None:
        return (
            f"{why} can take forever on some messages: repeat single characters or classes "
            "([ab]+), at most one of them unbounded, and bound the others ({0,20})"
        )
    if compiled.match(""):
        return "the pattern matches empty text; it would mask nothing useful"
    return None


@functools.lru_cache(maxsize=64)
def _compiled(rules: RedactionRules) -> re.Pattern[str]:
    parts = [f"(?P<token>{'|'.join(_TOKENS)})", f"(?P<assigned>{_ASSIGNED})"]
    if rules.emails:
        parts.append(f"(?P<email>{_EMAIL})")
    if rules.phones:
        parts.append(f"(?P<phone>{_PHONE})")
    if rules.patterns:
        # Own patterns may use groups of their own: wrapped, never named like ours.
        parts.append("(?P<custom>" + "|".join(f"(?:{p})" for p in rules.patterns) + ")")
    return re.compile("|".join(parts))


def _is_phone(candidate: str) -> bool:
    digits = sum(c.isdigit() for c in candidate)
    if _IPV4.fullmatch(candidate):
        return False
    if candidate.startswith("+"):
        return 8 <= digits <= 15
    # Without a country code: separated groups or an area code in brackets, 9 to 15 digits
    # (dates and times have fewer; decimals have a single separator).
    groups = [g for g in re.split(r"[ ().-]+", candidate) if g]
    return 9 <= digits <= 15 and len(groups) >= 3


# What every rule needs before it can match, checked in C in ~1 µs (the combined pattern
# costs ~17 µs on a 50-character message): every token pattern holds a run of 15+ of
# [A-Za-z0-9_-] except the JWT's, which starts "eyJ"; an ``assigned`` value follows one of
# the keywords (ASCII lower-case; "passw" for password and passwd); an e-mail has "@" then a "."; a phone
# ``_is_phone`` accepts has at least 8 digits. Only for ASCII text with no own patterns:
# under IGNORECASE a non-ASCII letter can match an ASCII one (U+212A KELVIN SIGN is "k").
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_-]{15}")
_KEYWORDS = ("bearer", "passw", "pwd", "secret", "token", "api", "access")
_DIGITS = b"0123456789"


def _nothing_to_mask(text: str, rules: RedactionRules) -> bool:
    """True only when no rule can match ``text``: then ``redact`` need not run its pattern."""
    if rules.patterns or not text.isascii():
        return False
    if "eyJ" in text or _TOKEN_RUN.search(text) is not None:
        return False
    at = text.find("@")
    if at >= 0 and text.find(".", at) > 0:
        return False
    low = text.lower()
    if (  # _KEYWORDS, spelled out: a generator over them costs more than the rest together
        "token" in low
        or "passw" in low
        or "secret" in low
        or "api" in low
        or "access" in low
        or "bearer" in low
        or "pwd" in low
    ):
        return False
    return len(text) - len(text.encode().translate(None, _DIGITS)) < 8


def redact(text: str, rules: RedactionRules = DEFAULT_RULES) -> tuple[str, int]:
    """The text with secrets (and, by the rules, e-mails, phones, own patterns) masked."""
    if _nothing_to_mask(text, rules):
        return text, 0
    return redact_full(text, rules)


def redact_full(text: str, rules: RedactionRules = DEFAULT_RULES) -> tuple[str, int]:
    """``redact`` without its pre-check: the one combined pattern over the whole text."""
    found = 0

    def mask(m: re.Match[str]) -> str:
        nonlocal found
        groups = m.groupdict()
        kind = next(k for k in LABELS if groups.get(k) is not None)
        if kind == "phone" and not _is_phone(m.group(0)):
            return m.group(0)
        found += 1
        if kind == "assigned":
            whole, value = m.group(0), m.group("value")
            return whole[: len(whole) - len(value)] + LABELS["assigned"]
        return LABELS[kind]

    return _compiled(rules).sub(mask, text), found


# -- search words --------------------------------------------------------------------------

_MARKUP = re.compile(r"<(?:@[!&]?\d+|#\d+|a?:\w{1,64}:\d+|t:-?\d+(?::[tTdDfFR])?|/[\w -]+:\d+)>")
# Zero-width characters, soft hyphens, variation selectors and bidi controls join nothing.
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff"
    "\U000e0000-\U000e01ef]"
)
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
    """A count's or a search's text, normalised exactly like stored messages."""
    return words(redact(text, rules)[0])
