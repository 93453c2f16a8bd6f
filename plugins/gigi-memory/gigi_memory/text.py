"""Redaction and search text: what of a message may be stored, and the words it is found by.

``redact`` masks token-shaped strings (API keys, bot tokens, JWTs, long random strings,
``password=...`` values), e-mail addresses and phone numbers. It runs before anything is
indexed or sealed, so a masked value is stored nowhere, not even sealed.

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

_REDACT = re.compile(
    "|".join(
        [
            f"(?P<token>{'|'.join(_TOKENS)})",
            f"(?P<assigned>{_ASSIGNED})",
            f"(?P<email>{_EMAIL})",
            f"(?P<phone>{_PHONE})",
        ]
    )
)
LABELS = {"token": "[token]", "assigned": "[secret]", "email": "[email]", "phone": "[phone]"}


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


def redact(text: str) -> tuple[str, int]:
    """The text with secrets, e-mail addresses and phone numbers masked, and how many."""
    found = 0

    def mask(m: re.Match[str]) -> str:
        nonlocal found
        kind = m.lastgroup
        if kind == "phone" and not _is_phone(m.group(0)):
            return m.group(0)
        if kind == "value":  # the named value inside an assignment
            kind = "assigned"
        found += 1
        if kind == "assigned":
            whole, value = m.group(0), m.group("value")
            return whole[: len(whole) - len(value)] + LABELS["assigned"]
        return LABELS.get(kind or "token", "[token]")

    return _REDACT.sub(mask, text), found


# -- search words --------------------------------------------------------------------------

_MARKUP = re.compile(r"<(?:@[!&]?\d+|#\d+|a?:\w{1,64}:\d+|t:-?\d+(?::[tTdDfFR])?|/[\w -]+:\d+)>")
# Zero-width characters, soft hyphens, variation selectors and bidi controls join nothing.
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff"
    "\U000e0000-\U000e01ef]"
)
_LABELS = re.compile(r"\[(?:token|secret|email|phone)\]")
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


def words(text: str) -> list[str]:
    """The search words of ``text`` (redact first: masked values are never words)."""
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
    return " ".join(words(text))


def query_words(text: str) -> list[str]:
    """A count's or a search's text, normalised exactly like stored messages."""
    return words(redact(text)[0])
