"""The plugin catalog as context: which enabled actions could serve a goal, matched by words.

Shared by the ``plugins.plan`` native tool and the broker's ``catalog`` mode; it ranks
manifest facts (names, descriptions) and runs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_WORD = re.compile(r"[a-z0-9]{3,}")
_STOP = frozenset(
    "the and for with you can what this that from are how does have into about please "
    "could would should there their them show tell".split()
)


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def match_actions(goal: str, actions: Iterable[Any], limit: int = 10) -> list[tuple[Any, int]]:
    """``(action, score)`` for actions whose name or description shares words with ``goal``,
    best first (ties by name); an empty goal matches every action with score 0."""
    wanted = words(goal)
    scored = []
    for action in actions:
        name_words = words(action.name.replace(".", " ").replace("_", " "))
        text_words = words(action.description or "")
        score = 2 * len(wanted & name_words) + len(wanted & text_words)
        if score or not wanted:
            scored.append((action, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0].name))
    return scored[:limit]
