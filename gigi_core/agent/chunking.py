"""Split long text into chunks under a limit on the most natural boundary available.

Linear in the text's length (an index walks the text; nothing copies the rest per
chunk), and capped: a reply longer than ``GIGI_REPLY_MAX_CHARS`` (default 20,000
characters, ten Discord messages; ``0`` turns the cap off) is cut on a natural
boundary and ends with a note saying how much was shown. Surfaces that can attach a
file call ``cap_text`` themselves and attach the full text when ``truncated``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from gigi_core.errors import ConfigError

REPLY_MAX_CHARS_ENV = "GIGI_REPLY_MAX_CHARS"
DEFAULT_REPLY_MAX_CHARS = 20_000
MIN_REPLY_MAX_CHARS = 100
_SPACE = re.compile(r"\s*")
_FENCE = "```"


def reply_max_chars() -> int:
    """``GIGI_REPLY_MAX_CHARS``: a whole number, 0 (no cap) or at least 100."""
    raw = os.environ.get(REPLY_MAX_CHARS_ENV) or ""
    if not raw.strip():
        return DEFAULT_REPLY_MAX_CHARS
    value = raw.strip()
    if value.isdigit() and (int(value) == 0 or int(value) >= MIN_REPLY_MAX_CHARS):
        return int(value)
    raise ConfigError(
        f"{REPLY_MAX_CHARS_ENV}: {raw!r} is not 0 (no cap) or a whole number of characters "
        f"of at least {MIN_REPLY_MAX_CHARS}",
        hint=f"unset {REPLY_MAX_CHARS_ENV} for the default of {DEFAULT_REPLY_MAX_CHARS:,}",
    )


@dataclass(frozen=True)
class CappedText:
    """``text`` to show; when ``truncated``, ``shown_chars`` of ``total_chars`` plus a note."""

    text: str
    truncated: bool
    shown_chars: int
    total_chars: int


def _note(shown: int, total: int) -> str:
    return f"(answer was cut: {shown:,} of {total:,} characters shown)"


def cap_text(text: str, max_chars: int | None = None) -> CappedText:
    """Cut ``text`` to ``max_chars`` (default: the setting) on a boundary, with a note."""
    limit = reply_max_chars() if max_chars is None else max_chars
    total = len(text)
    if limit <= 0 or total <= limit:
        return CappedText(text, False, total, total)
    budget = max(limit - len(_note(total, total)) - len(_FENCE) - 3, 1)
    cut = -1
    for sep in ("\n\n", "\n", " "):
        cut = text.rfind(sep, 0, budget)
        if cut > budget * 3 // 4:
            break
    shown = text[: cut if cut > 0 else budget].rstrip()
    if shown.count(_FENCE) % 2:  # close an open code block so the note renders as text
        shown += "\n" + _FENCE
    return CappedText(f"{shown}\n\n{_note(len(shown), total)}", True, len(shown), total)


def split_text(text: str, limit: int = 2000, *, max_chars: int | None = None) -> list[str]:
    """Paragraphs first, then lines, then words; a single overlong word is cut hard.

    ``max_chars`` caps the whole text first (default: ``GIGI_REPLY_MAX_CHARS``; 0: none).
    """
    if limit < 1:
        raise ValueError("limit must be positive")
    text = cap_text(text.strip(), max_chars).text
    if not text:
        return []
    chunks: list[str] = []
    pos, end = 0, len(text)
    while end - pos > limit:
        cut = -1
        for sep in ("\n\n", "\n", " "):
            cut = text.rfind(sep, pos, pos + limit)
            if cut - pos > limit // 4:
                break
        if cut <= pos:
            chunks.append(text[pos : pos + limit])
            pos += limit
        else:
            chunks.append(text[pos:cut].rstrip())
            pos = _SPACE.match(text, cut).end()
    if pos < end:
        chunks.append(text[pos:])
    return chunks
