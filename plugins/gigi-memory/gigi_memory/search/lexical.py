"""How ``memory.search`` ranks what people said: BM25 in Python over the engine's candidates.

The database finds the candidates (FTS5 / ``tsvector``) and Python scores them, so a ranking
is the same on SQLite and PostgreSQL, and it can use what the engines' rankers cannot:

- **Stop words.** A question's function words ("what", "did", "the") are dropped before
  anything is matched (all of them kept when nothing else is left): FTS5 and ``ts_rank_cd``
  otherwise rank every message that has them.
- **Who said it.** A query word that is a member's display name (``authors``) counts as
  present in every message that member wrote, as if the name were indexed with the text:
  members ask "what did Caroline say about ...". Names are looked up when searching, never
  copied into the index, so a rename finds old and new messages and an erased member's
  names go with their data.
- **The message before.** A reply is read with what it answers: a matching message also
  scores ``neighbour_weight`` of the score of the message just before it, when that one
  matches too ("when is the release?" / "friday, after the freeze").
- **Fusion by score.** The lexical score (scaled to the best hit) plus ``vector_weight``
  times the cosine of the vector path; reciprocal rank fusion of a weak vector path pulled
  the merged list below the lexical one on real conversations (docs/benchmarks/memory-search.md).
- **Recency only when asked.** "latest", "last week" (``gigi_core.retrieval.asks_for_time``,
  the retrieval engine's own rule): a recency prior; otherwise none.

Every constant is a documented setting (``GIGI_MEMORY_<NAME>``, docs/memory.md), chosen on
the LoCoMo dev conversations (``bench/memory_recall.py``).
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from gigi_core import ToolExecutionError

# English function words as ``text.words`` splits them ("don't" -> "don", "t"). Only the
# query's words are filtered: messages keep every word, so counts and phrases are exact.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing don down during each few
    for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t d ll m re ve didn doesn isn wasn weren aren hasn haven
    hadn wouldn shouldn couldn let ever also""".split()
)


@dataclass(frozen=True)
class RankSettings:
    """The ranking's constants; each is ``GIGI_MEMORY_<NAME upper-cased>`` in the environment."""

    k1: float = 1.2  # BM25 term-frequency saturation
    b: float = 0.75  # BM25 length normalisation
    neighbour_weight: float = 0.5  # share of the previous message's score a message gets
    vector_weight: float = 0.3  # cosine's weight beside the lexical score scaled to 1
    recency_weight: float = 0.2  # for time queries: the newest hit's bonus (scaled to 1)
    candidates: int = 200  # full-text candidates scored per search

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RankSettings:
        env = os.environ if environ is None else environ
        values: dict[str, float | int] = {}
        for f in fields(cls):
            raw = env.get(f"GIGI_MEMORY_{f.name.upper()}")
            if raw is None:
                continue
            try:
                value = int(raw) if f.type == "int" else float(raw)
            except ValueError:
                raise ValueError(
                    f"GIGI_MEMORY_{f.name.upper()}: expected a number, found {raw[:40]!r}"
                ) from None
            if value < 0 or (f.name == "candidates" and value < 1):
                raise ValueError(f"GIGI_MEMORY_{f.name.upper()}: must be positive")
            values[f.name] = value
        return cls(**values)  # type: ignore[arg-type]


@functools.cache
def settings() -> RankSettings:
    """The process's settings, read once (``settings.cache_clear()`` re-reads them). A bad
    value refuses the search with its name, never a bare ``ValueError`` the member cannot read."""
    try:
        return RankSettings.from_env()
    except ValueError as exc:
        raise ToolExecutionError(f"memory search is misconfigured: {exc}") from None


def content_words(words: Iterable[str]) -> list[str]:
    """The query's words without stop words or repeats; all of them when only those are left."""
    unique = list(dict.fromkeys(words))
    kept = [w for w in unique if w not in STOP_WORDS]
    return kept or unique


@dataclass(frozen=True)
class Stats:
    """Collection statistics for BM25: messages, their mean length in words, and per word
    the messages holding it (for a name word, plus the messages its members wrote)."""

    docs: int
    mean_length: float
    df: Mapping[str, int]

    def idf(self, word: str) -> float:
        n = min(self.df.get(word, 0), self.docs)
        return math.log(1.0 + (self.docs - n + 0.5) / (n + 0.5))


def bm25(
    text: str | None,
    author_id: str,
    query: list[str],
    stats: Stats,
    names: Mapping[str, frozenset[str]],
    rank: RankSettings,
) -> float:
    """One message's own score: ``text`` is its search text (words joined by spaces)."""
    tokens = text.split() if text else []
    tf = Counter(tokens)
    length = len(tokens) / stats.mean_length if stats.mean_length > 0 else 1.0
    score = 0.0
    for word in query:
        n = tf.get(word, 0)
        if author_id in names.get(word, ()):
            n += 1  # the name counts as written with the message
        if n:
            score += (
                stats.idf(word) * n * (rank.k1 + 1) / (n + rank.k1 * (1 - rank.b + rank.b * length))
            )
    return score


@dataclass(frozen=True)
class Fused:
    """One merged hit: its row, final score and the paths that found it."""

    row: object
    score: float
    paths: tuple[str, ...]


def fuse(
    lexical: Mapping[int, tuple[object, float]],
    vector: Mapping[int, tuple[object, float]],
    vector_complete: bool,
    created: Mapping[int, int],
    limit: int,
    rank: RankSettings,
    *,
    recency: bool = False,
) -> list[Fused]:
    """Score fusion. ``lexical``: row id -> (row, lexical score with neighbour credit);
    ``vector``: row id -> (row, cosine). A row the vector path did not return scores the
    lowest cosine it did return when its list was full (``not vector_complete``: nothing
    unseen can be nearer), else nothing. ``created``: row id -> time, for the recency prior."""
    top = max((s for _, s in lexical.values()), default=0.0)
    floor = 0.0
    if vector and not vector_complete:
        floor = min(s for _, s in vector.values())
    ids = set(lexical) | set(vector)
    scores: dict[int, float] = {}
    for i in ids:
        lex = lexical[i][1] / top if top > 0 and i in lexical else 0.0
        sim = vector[i][1] if i in vector else (floor if vector else 0.0)
        scores[i] = lex + rank.vector_weight * max(sim, 0.0)
    if recency and ids:
        newest = sorted(ids, key=lambda i: created[i], reverse=True)
        for position, i in enumerate(newest):
            scores[i] += rank.recency_weight / (1 + position)
    best = sorted(ids, key=lambda i: (-scores[i], -created[i], -i))[:limit]
    out = []
    for i in best:
        row = lexical[i][0] if i in lexical else vector[i][0]
        paths = tuple(p for p, src in (("fulltext", lexical), ("vector", vector)) if i in src)
        out.append(Fused(row, round(scores[i], 6), paths))
    return out
