"""What a retrieval path may say about the answer, checked by code.

Two optional retriever attributes, both plain text from a plugin and therefore untrusted:

- ``answer_notes``: how to answer from this path's items (``cite channel and approximate
  date, never quote``). It goes into the pack, in the user's turn, only when the path
  contributed an item: never into the system prompt.
- ``no_record``: the reply when the member asked a knowledge question and every path
  asked answered, with nothing. Code decides that, not the model (``no_record_reply``).

Either is ignored (and logged) unless it is a string of at most ``MAX_CHARS`` characters
once whitespace is collapsed; control characters are removed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

MAX_CHARS = 300
# A question about recorded knowledge: a decision, an owner or assignment, an action or a
# dependency. Narrower than the query plan's intents on purpose: "who are you?" is not one.
_KNOWLEDGE = re.compile(
    r"\b(decide[ds]?|decision|decisions|agreed?|settled on|why did we|"
    r"who (?:owns|is responsible|is assigned|was assigned|took on|is doing|will do)|"
    r"owner|owns|assigned|responsible for|action items?|deadline|due date|"
    r"blocked|blocking|blocker|depends on|dependency|waiting on)\b",
    re.I,
)
# Asked, not requested: an interrogative first word (after an optional mention), not "can
# you ..." or "add an action item ..." (those go to the model and its tools).
_QUESTION = re.compile(
    r"^\s*(?:<@!?\d+>\s*|@\w+\s*)*[,:]?\s*"
    r"(?:who|whom|whose|what|when|where|which|why|how|did|do|does|is|are|was|were|has|have|"
    r"had|any)\b",
    re.I,
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FAILED = frozenset({"timeout", "error", "malformed"})


def clean(value: Any, *, path: str, attribute: str) -> str | None:
    """The attribute's text as the pack may use it, or None (absent or not acceptable)."""
    if value is None:
        return None
    if not isinstance(value, str):
        log.warning("retriever %s: %s must be a string; ignored", path, attribute)
        return None
    text = " ".join(_CONTROL.sub(" ", value).split())
    if not text:
        return None
    if len(text) > MAX_CHARS:
        log.warning("retriever %s: %s is over %d characters; ignored", path, attribute, MAX_CHARS)
        return None
    return text


def guidance(paths: Sequence[Any], contributed: Iterable[str]) -> list[tuple[str, str]]:
    """(path name, answer notes) of the permitted paths that contributed an item, by name."""
    used = set(contributed)
    out = []
    for p in sorted(paths, key=lambda p: p.name):
        if p.name not in used:
            continue
        text = clean(
            getattr(p.retriever, "answer_notes", None), path=p.name, attribute="answer_notes"
        )
        if text is not None:
            out.append((p.name, text))
    return out


def knowledge_question(mode: str, text: str) -> bool:
    """Whether the member asked for recorded knowledge: the ``knowledge`` mode, or a question
    (interrogative first word) naming a decision, an owner, an action or a dependency
    (patterns, never a model). A request ("add an action item", "can you help, I am
    blocked") is not one: it goes to the model and its tools."""
    if mode == "knowledge":
        return True
    return _QUESTION.search(text) is not None and _KNOWLEDGE.search(text) is not None


def no_record_reply(
    *,
    mode: str,
    text: str,
    sources: Sequence[str],
    paths: Sequence[Any],
    reports: Mapping[str, Any],
    found_anything: bool,
) -> tuple[str, str] | None:
    """(path name, reply) when the answer is "no record", decided here; else None.

    Only when: the run's sources include knowledge; it is a knowledge question; every
    permitted knowledge path was asked (a plan that left one out, model-proposed or not,
    does not get to decide "no record") and answered; no path asked failed or timed out
    (then we do not know); and nothing at all was found, by any source (memory, channel,
    pinned).
    The reply is the first knowledge path's ``no_record`` by name; without one, None (the
    model answers as before).
    """
    if "knowledge" not in sources or found_anything:
        return None
    if not knowledge_question(mode, text):
        return None
    asked = {n: r for n, r in reports.items() if getattr(r, "status", None) != "not_asked"}
    if any(getattr(r, "status", None) in _FAILED for r in asked.values()):
        return None
    knowledge = [p for p in paths if p.source == "knowledge"]
    if any(p.name not in asked for p in knowledge):
        return None
    answered = [
        p for p in knowledge if getattr(asked.get(p.name), "status", None) == "ok"
    ]  # fmt: skip
    for p in sorted(answered, key=lambda p: p.name):
        reply = clean(getattr(p.retriever, "no_record", None), path=p.name, attribute="no_record")
        if reply is not None:
            return p.name, reply
    return None
