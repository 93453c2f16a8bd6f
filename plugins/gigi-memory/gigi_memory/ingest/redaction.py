"""Redaction: what of a message may be stored, masked before anything is indexed or sealed.

The text is normalised first (Unicode NFKC, invisible and format characters removed), so a
fullwidth at sign (U+FF20) or a ``pass\\u200bword=`` is masked like its plain spelling, and what is
stored and indexed is that normalised, masked text. Then token-shaped strings (API keys,
bot tokens, JWTs, long random strings, ``password=...`` values) are always masked, and by
the server's ``RedactionRules`` e-mail addresses, phone numbers (both on by default) and
the server's own patterns.

The built-in patterns are Python ``re`` written so that each can start only once per run
of the characters it is made of and never backtracks across a run (look-behind anchors,
possessive repeats): linear on any message (``test_memory_redaction_limits``). A server's
own patterns are compiled only with RE2 (``google-re2``), which has no backtracking at all;
what RE2 cannot compile is refused. They run off the event loop (``gigi_memory.ingest.redactor``)
for ingest and the embedding job; a query is cut to ``MAX_QUERY_CHARS`` first instead.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import re2

from gigi_core import ToolExecutionError

LABELS = {
    "token": "[token]",
    "assigned": "[secret]",
    "email": "[email]",
    "phone": "[phone]",
    "custom": "[redacted]",
}
MAX_PATTERNS = 20
MAX_PATTERN_CHARS = 200
RE2_MAX_MEM = 1 << 20  # per compiled set of patterns: bounds its program (and compile time)

# -- normalisation -------------------------------------------------------------------------

# Zero-width characters, soft hyphens, variation selectors and bidi controls join nothing;
# with every other format character (Cf) they are removed before masking (``_hidden``).
INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff"
    "\U000e0000-\U000e01ef]"
)
_ZWJ, _VARIATION = "\u200d", "\ufe0e\ufe0f"


@functools.cache
def _hidden() -> re.Pattern[str]:
    """``INVISIBLE`` and every format character (Cf) Unicode assigns (planes 0, 1 and 14)."""
    extra = "".join(
        re.escape(chr(cp))
        for cp in (*range(0x20000), *range(0xE0000, 0xE1000))
        if unicodedata.category(chr(cp)) == "Cf" and not INVISIBLE.match(chr(cp))
    )
    return re.compile(INVISIBLE.pattern[:-1] + extra + "]")


def _emoji(ch: str) -> bool:
    return unicodedata.category(ch) in ("So", "Sk")


def _keep_or_drop(m: re.Match[str]) -> str:
    """An emoji's own joiner or presentation selector stays (👨‍👩‍👧, ❤️); any other goes."""
    ch, text, at = m.group(0), m.string, m.start()
    before = text[at - 1] if at else ""
    after = text[m.end() : m.end() + 1]
    if ch in _VARIATION and before and _emoji(before):
        return ch
    if ch == _ZWJ and before and after and _emoji(after):
        if _emoji(before) or (before in _VARIATION and at >= 2 and _emoji(text[at - 2])):
            return ch
    return ""


def normalise(text: str) -> str:
    """NFKC, invisible and format characters removed: the text masking reads and memory keeps."""
    if text.isascii():
        return text  # NFKC changes no ASCII, and no invisible character is ASCII
    text = unicodedata.normalize("NFKC", text)
    return _hidden().sub(_keep_or_drop, text)


# -- built-in patterns (Python re, linear) ---------------------------------------------------

_RUN = "A-Za-z0-9_-"
_TOKENS = [
    r"[MNO][A-Za-z\d_-]{23,27}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,40}",  # Discord bot token
    r"sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}",  # OpenAI, Anthropic, Stripe
    r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",  # GitHub
    r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"AKIA[0-9A-Z]{16}",  # AWS access key id
    r"AIza[0-9A-Za-z_-]{35}",  # Google API key
    # JWT: only at the start of a run ("eyJeyJeyJ…" would start a scan at each one).
    rf"(?<![{_RUN}])eyJ[{_RUN}]{{8,}}+\.[{_RUN}]{{8,}}+\.[{_RUN}]{{8,}}+",
    # 32+ characters mixing letters and digits: keys, secrets, digests.
    rf"(?<![{_RUN}])(?=[{_RUN}]*\d)(?=[{_RUN}]*[A-Za-z])[{_RUN}]{{32,}}(?![{_RUN}])",
]
_ASSIGNED = (
    r"(?i:\b(?:bearer|password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)"
    r"(?:\s*[:=]\s*|\s+))(?P<value>[^\s'\"]{6,})"
)
# The local part starts once per run and is taken whole ("aaaa…" without "@": one scan).
_EMAIL = r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
# "Not followed by [\w.]* and a digit", written so the look-ahead stops at the next digit.
_PHONE = r"(?<![\w+.])\+?\(?\d[\d ().-]{6,}\d(?!(?:[^\W\d]|\.)*+\d)"
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")


@functools.lru_cache(maxsize=8)
def _builtin(emails: bool, phones: bool) -> re.Pattern[str]:
    parts = [f"(?P<token>{'|'.join(_TOKENS)})", f"(?P<assigned>{_ASSIGNED})"]
    if emails:
        parts.append(f"(?P<email>{_EMAIL})")
    if phones:
        parts.append(f"(?P<phone>{_PHONE})")
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


# -- a server's own patterns (RE2 only) ------------------------------------------------------

_RE2_HINT = (
    "patterns use RE2 syntax: no look-around ((?=, (?!, (?<=, (?<!), no backreferences (\\1), "
    "no atomic groups or possessive repeats, no verbose mode (?x); repeats at most {1000}"
)


class RedactionError(ToolExecutionError):
    """The server's patterns cannot be applied: the message names the pattern and why."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern on stderr
    options.never_capture = True  # one span per match is all masking needs
    options.max_mem = RE2_MAX_MEM
    return options


def _re2_error(exc: Exception) -> str:
    raw = exc.args[0] if exc.args else str(exc)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if "too large" in text:
        return "too large for RE2 (use smaller counted repeats such as {1,20})"
    return text


def _compile(source: str) -> Any:
    return re2.compile(source, _options())


def _combined(patterns: tuple[str, ...]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


_EMPTY_PROBES = ("", "a", " ", "a a", "a\nb", "1_-.")


def check_pattern(pattern: Any) -> str | None:
    """Why a server's own pattern is refused (None: it is fine), checked as it is applied:
    compiled by RE2 inside the group ``(?:…)`` the combined set puts it in."""
    if not isinstance(pattern, str) or not pattern.strip():
        return "a pattern must be a non-empty string"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"a pattern has at most {MAX_PATTERN_CHARS} characters"
    if "\\C" in pattern.replace("\\\\", ""):
        return "\\C (any byte) can split a character; use . instead"
    try:
        _compile(pattern)
        compiled = _compile(_combined((pattern,)))
    except re2.error as exc:
        return f"RE2 cannot compile it ({_re2_error(exc)}); {_RE2_HINT}"
    for probe in _EMPTY_PROBES:
        if any(m.end() == m.start() for m in compiled.finditer(probe)):
            return "the pattern matches empty text; it would mask nothing useful"
    return None


def check_patterns(patterns: tuple[str, ...]) -> str | None:
    """Why a set of patterns cannot be applied together (None: it can), naming the pattern."""
    if len(patterns) > MAX_PATTERNS:
        return f"at most {MAX_PATTERNS} redaction patterns; remove one first"
    for pattern in patterns:
        if (why := check_pattern(pattern)) is not None:
            return f"pattern {pattern!r} is refused: {why}"
    if patterns:
        try:
            _compile(_combined(patterns))
        except re2.error as exc:
            return f"the patterns together cannot be compiled: {_re2_error(exc)}"
    return None


@functools.lru_cache(maxsize=64)
def custom_pattern(patterns: tuple[str, ...]) -> Any:
    """The server's patterns as one RE2 set; raises ``RedactionError`` naming what fails."""
    problem = check_patterns(patterns)
    if problem is not None:
        raise RedactionError(
            f"memory's redaction rules cannot be applied: {problem}. "
            "Remove it with /memory policy redact_remove (messages are kept without text "
            "until then)"
        )
    return _compile(_combined(patterns))


def mask_custom(text: str, patterns: tuple[str, ...]) -> tuple[str, int]:
    """The server's own patterns over an already normalised text (RE2: linear per match)."""
    if not patterns or not text:
        return text, 0
    compiled = custom_pattern(patterns)
    found = 0

    def mask(m: Any) -> str:
        nonlocal found
        if m.end() == m.start():  # an empty match (\b and the like) masks nothing
            return ""
        found += 1
        return LABELS["custom"]

    return compiled.subn(mask, text)[0], found


# -- rules -----------------------------------------------------------------------------------


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
        """Stored rules; anything unreadable falls back to the defaults (never to less).

        A stored pattern that no longer compiles is kept, not dropped: applying the rules
        then fails loudly (``RedactionError``) instead of masking less than the server asked.
        """
        if not raw:
            return DEFAULT_RULES
        try:
            data = json.loads(raw)
            return cls(
                emails=bool(data.get("emails", True)),
                phones=bool(data.get("phones", True)),
                patterns=tuple(str(p) for p in data.get("patterns", ())),
            )
        except (ValueError, TypeError, AttributeError):
            return DEFAULT_RULES

    def problem(self) -> str | None:
        """Why these rules cannot be applied (None: they can); for ``/memory status``."""
        return _rules_problem(self.patterns)


@functools.lru_cache(maxsize=64)
def _rules_problem(patterns: tuple[str, ...]) -> str | None:
    return check_patterns(patterns)


DEFAULT_RULES = RedactionRules()


# -- masking ---------------------------------------------------------------------------------

# What every built-in rule needs before it can match, checked in C in ~1 µs (the combined
# pattern costs ~17 µs on a 50-character message): every token pattern holds a run of 15+
# of [A-Za-z0-9_-] except the JWT's, which starts "eyJ"; an ``assigned`` value follows one
# of the keywords (ASCII lower-case; "passw" for password and passwd); an e-mail has "@"
# then a "."; a phone ``_is_phone`` accepts has at least 8 digits. Only for ASCII text:
# under IGNORECASE a non-ASCII letter can match an ASCII one (U+212A KELVIN SIGN is "k").
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_-]{15}")
_KEYWORDS = ("bearer", "passw", "pwd", "secret", "token", "api", "access")
_DIGITS = b"0123456789"


def _nothing_to_mask(text: str, rules: RedactionRules | None = None) -> bool:
    """True only when no built-in rule (nor, with ``rules``, an own pattern) can match."""
    if (rules is not None and rules.patterns) or not text.isascii():
        return False
    if "eyJ" in text or _TOKEN_RUN.search(text) is not None:
        return False
    at = text.find("@")
    if at >= 0 and text.find(".", at) > 0:
        return False
    low = text.lower()
    if (  # the keywords, spelled out: a generator over them costs more than the rest together
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


def mask_builtin(text: str, rules: RedactionRules = DEFAULT_RULES) -> tuple[str, int]:
    """Tokens and secrets, and by the rules e-mails and phones, over a normalised text."""
    if _nothing_to_mask(text):
        return text, 0
    return _mask_builtin(text, rules)


def _mask_builtin(text: str, rules: RedactionRules) -> tuple[str, int]:
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

    return _builtin(rules.emails, rules.phones).sub(mask, text), found


def redact(text: str, rules: RedactionRules = DEFAULT_RULES) -> tuple[str, int]:
    """The normalised text with secrets (and, by the rules, e-mails, phones, own patterns)
    masked, and how many values were masked. In the caller's thread, at any length: on the
    event loop only through ``redact_query``; ingest and the embedding job run the server's
    patterns off the loop (``redactor``)."""
    text, found = mask_builtin(normalise(text), rules)
    if rules.patterns:
        text, more = mask_custom(text, rules.patterns)
        found += more
    return text, found


MAX_QUERY_CHARS = 1000  # a query's redaction runs on the loop: this bounds what it costs


def cut_query(text: str) -> str:
    """At most ``MAX_QUERY_CHARS``, cut at the last space before the limit (a key or token
    cut in half would escape its mask); a text without a space there is cut at the limit."""
    if len(text) <= MAX_QUERY_CHARS:
        return text
    head = text[: MAX_QUERY_CHARS + 1]
    at = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:at] if at > 0 else head[:MAX_QUERY_CHARS]


def redact_query(text: str, rules: RedactionRules = DEFAULT_RULES) -> tuple[str, int]:
    """``redact`` for a search's or a count's query, which runs on the event loop: cut first
    (and again after NFKC, which can lengthen text), so a server's own pattern costs at most
    what it costs on 1,000 characters (``a.*b|a``: ~2 ms; ~30 ms on 4,000)."""
    return redact(cut_query(normalise(cut_query(text))), rules)


def redact_full(text: str, rules: RedactionRules = DEFAULT_RULES) -> tuple[str, int]:
    """``redact`` without the built-ins' pre-check (the benchmarks compare the two)."""
    text, found = _mask_builtin(normalise(text), rules)
    if rules.patterns:
        text, more = mask_custom(text, rules.patterns)
        found += more
    return text, found
