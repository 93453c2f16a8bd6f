"""The no-verbatim guard: model output that copies a run of a message's words is not stored.

Seed 004 asks for synthesised text only; a model may still echo its input. Any stored
string sharing a run of ``RUN`` consecutive words with a window message is rejected (the
item is dropped, or a generic note written instead), so message text cannot reach a table
through the model either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RUN = 6
_WORD = re.compile(r"\w+", re.UNICODE)


def _grams(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


class VerbatimGuard:
    def __init__(self, texts: Iterable[str]) -> None:
        self._grams: set[tuple[str, ...]] = set()
        self._whole: list[str] = []
        for text in texts:
            self._grams |= _grams(text)
            norm = " ".join(_WORD.findall(text.lower()))
            if len(norm) >= 12:
                self._whole.append(norm)

    def copies(self, value: str | None) -> bool:
        if not value:
            return False
        norm = " ".join(_WORD.findall(value.lower()))
        if any(w in norm for w in self._whole):  # a short message copied whole
            return True
        return bool(self._grams and not self._grams.isdisjoint(_grams(value)))
