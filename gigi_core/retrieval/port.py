"""The retrieval port: what a retriever returns (``Hit``), what it may see (``Scope``), and
the ``Retriever`` protocol plugins register with ``register_retrievers``.

Hits are untrusted plugin output: the engine checks each one (``check_hit``) and drops what
is malformed or outside the scope, so a buggy retriever can never widen what a member sees.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from gigi_core.errors import GigiError

SOURCE_ID = re.compile(r"^[a-z][a-z0-9_.-]{0,39}:[A-Za-z0-9_.:/@#-]{1,200}$")
MAX_HIT_TEXT = 4000  # characters a single hit may carry to the model
KINDS = ("decision", "action", "entity", "signal", "summary", "message", "context")


class RetrievalError(GigiError):
    """A retrieval request that cannot run as given (bad scope, unknown retriever)."""


@dataclass(frozen=True)
class Citation:
    """How an answer names a hit: a label such as ``#design · 2026-11-02`` and a jump URL."""

    label: str
    url: str | None = None


@dataclass(frozen=True)
class Hit:
    """One piece of context a retriever found, identified by a stable, namespaced source id.

    ``source_id`` looks like ``memory:msg:<id>`` or ``knowledge:decision:<id>``: the same
    record found by two paths has the same id, which is how the engine deduplicates. ``text``
    is what the model may read (a snippet the member may see, or a synthesised statement).
    ``channel_id`` is None only for a personal-mode item owned by ``user_id``.
    """

    source_id: str
    kind: str
    text: str
    channel_id: str | None
    timestamp: datetime | None = None
    confidence: float = 1.0
    citation: Citation | None = None
    paths: tuple[str, ...] = ()
    user_id: str | None = None  # the owner of a personal-mode item
    edited: bool = False  # changed since it was indexed
    superseded: bool = False  # replaced by a newer record (e.g. a later decision)
    pinned: bool = False  # always kept in a pack (never trimmed for budget)

    def __post_init__(self) -> None:
        if not isinstance(self.paths, tuple):
            object.__setattr__(self, "paths", tuple(self.paths))


@dataclass(frozen=True)
class Scope:
    """What a retriever may read for this request; it must return nothing outside it.

    ``channel_ids`` are the channels the actor may view *now* (from the surface, never the
    model). ``user_id`` is set in personal mode (a DM): the actor's own items only.
    ``since``/``until`` are the query plan's time range, a hint a retriever may narrow by.
    """

    guild_id: str
    channel_ids: frozenset[str]
    user_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.channel_ids, frozenset):
            raise RetrievalError(
                "Scope.channel_ids must be a frozenset of the channels the actor may view",
                hint="pass frozenset(ids); an empty frozenset means no channel",
            )

    def admits(self, hit: Hit) -> bool:
        """Whether the hit lies inside this scope (the engine drops it otherwise)."""
        if hit.channel_id is not None:
            return hit.channel_id in self.channel_ids
        return self.user_id is not None and hit.user_id == self.user_id


@runtime_checkable
class Retriever(Protocol):
    """A retrieval path. Register it with ``register("memory", MemoryRetriever())``.

    ``capability`` is what the actor must hold in the guild (the engine asks only
    retrievers of plugins enabled there whose capability the actor holds); ``paths`` names
    the sub-paths the retriever fuses itself (``("fulltext", "vector")``), reported in
    ``Hit.paths``. Optional: ``plugin`` (the manifest plugin it belongs to, when its package
    declares several), ``source`` (``"memory"`` or ``"knowledge"``: which broker mode asks
    it; default ``"memory"``) and ``async lookup(source_ids, scope) -> list[Hit]``, which
    re-reads items a model saw earlier so restore handles notice edits and deletions.
    """

    name: str
    paths: Sequence[str]
    capability: str

    async def retrieve(self, query: str, scope: Scope, limit: int) -> list[Hit]: ...


def as_hit(value: Any) -> Hit:
    """A ``Hit`` from a retriever's item (a Hit or a mapping of its fields); ValueError if not."""
    if isinstance(value, Hit):
        hit = value
    elif isinstance(value, dict):
        data = dict(value)
        try:  # a malformed citation is one malformed hit, never the whole retrieval
            citation = data.get("citation")
            if isinstance(citation, dict):
                data["citation"] = Citation(**citation)
            hit = Hit(**data)
        except TypeError as exc:
            raise ValueError(f"not a hit: {exc}") from None
    else:
        raise ValueError(f"not a hit: {type(value).__name__}")
    problem = check_hit(hit)
    if problem:
        raise ValueError(problem)
    return hit


def check_hit(hit: Hit) -> str | None:
    """Why a hit is malformed, or None. Only field names and limits appear, never values."""
    if not isinstance(hit.source_id, str) or not SOURCE_ID.match(hit.source_id):
        return "source_id must look like 'namespace:id' (e.g. memory:msg:123)"
    if not isinstance(hit.kind, str) or not hit.kind or len(hit.kind) > 40:
        return "kind must be a short string"
    if not isinstance(hit.text, str) or not hit.text.strip():
        return "text must be a non-empty string"
    if hit.channel_id is not None and not isinstance(hit.channel_id, str):
        return "channel_id must be a string or None"
    if hit.timestamp is not None and (
        not isinstance(hit.timestamp, datetime) or hit.timestamp.tzinfo is None
    ):
        return "timestamp must be a timezone-aware datetime or None"
    conf = hit.confidence
    if isinstance(conf, bool) or not isinstance(conf, int | float) or not math.isfinite(conf):
        return "confidence must be a number"
    if not 0.0 <= float(conf) <= 1.0:
        return "confidence must be between 0 and 1"
    if hit.citation is not None and not (
        isinstance(hit.citation, Citation) and isinstance(hit.citation.label, str)
    ):
        return "citation must be a Citation with a label"
    if not all(isinstance(p, str) for p in hit.paths):
        return "paths must be strings"
    return None


def clip_text(text: str) -> str:
    """A hit's text as the engine keeps it: at most ``MAX_HIT_TEXT`` characters."""
    return text if len(text) <= MAX_HIT_TEXT else text[: MAX_HIT_TEXT - 1] + "…"


@dataclass(frozen=True)
class PathReport:
    """How one retriever did in one request: counts and a status, never content."""

    name: str
    status: str  # ok | timeout | error | malformed | not_permitted | not_asked
    hits: int = 0
    out_of_scope: int = 0
    malformed: int = 0
    ms: int = 0
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status,
            "hits": self.hits,
            "out_of_scope": self.out_of_scope,
            "malformed": self.malformed,
            "ms": self.ms,
        }
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass(frozen=True)
class Ranked:
    """A merged hit with its final score and the paths (``retriever.subpath``) that found it."""

    hit: Hit
    score: float
    paths: tuple[str, ...]
    ranks: dict[str, int] = field(default_factory=dict)
