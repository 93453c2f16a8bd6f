"""The complexity score that escalates an extraction to the ``complex`` slot.

Computed from code, never from the model's say-so: how full the window is, how many people
talk in it, how many entities and categories the classifier found, and how unsure it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# weights sum to 1, so the score is in [0, 1]
W_WINDOW, W_AUTHORS, W_ENTITIES, W_CATEGORIES, W_UNCERTAIN = 0.3, 0.2, 0.2, 0.1, 0.2


def score(
    window: Sequence[Any],
    categories: Sequence[str],
    entities: Sequence[str],
    confidence: float,
    window_size: int,
) -> float:
    """0 for one confident message with nothing in it, 1 for a full window of five or more
    authors, five or more entities, three or more categories and zero confidence."""
    fill = min(len(window) / max(window_size, 1), 1.0)
    authors = len({m.author_id for m in window})
    talk = min(max(authors - 1, 0) / 4, 1.0)
    named = min(len(set(entities)) / 5, 1.0)
    kinds = [c for c in categories if c != "routine"]
    spread = min(max(len(set(kinds)) - 1, 0) / 2, 1.0)
    unsure = 1.0 - min(max(confidence, 0.0), 1.0)
    total = (
        W_WINDOW * fill
        + W_AUTHORS * talk
        + W_ENTITIES * named
        + W_CATEGORIES * spread
        + W_UNCERTAIN * unsure
    )
    return round(total, 4)
