"""Where ``memory.search``'s handler spends its time: perf counters around each stage.

Used by ``bench/memory_search.py`` after its timed passes. The wrappers are installed on the
running service for the stage pass only and removed after it; the handler's code is not
changed. The two retrieval paths run at once, so their stages overlap: the table gives each
stage's own time per query (summed when it runs more than once) and how often it ran, and
the handler's wall time beside them.

Statements are timed by SQLAlchemy's cursor events (the driver's ``execute``: the round
trip and the server's work, plus whatever else the event loop ran meanwhile) and named by
what they are; the pool's pre-ping by wrapping the dialect's ``do_ping``.
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

STATEMENTS = (  # (a piece of the SQL, the stage's name): the first that matches names it
    ("WITH near", "SQL: vector statement (+ rows)"),
    ("ts_rank_cd", "SQL: FTS statement (+ rows)"),
    ("memory_fts.rank", "SQL: FTS statement (+ rows)"),
    ("json_each(", "SQL: vector hits' rows by id (SQLite)"),
    ("GROUP BY s.channel_id", "SQL: vector cache check (SQLite)"),
    ("hnsw.", "SQL: set hnsw.* settings"),
    ("FROM memory_segments s WHERE", "SQL: vector scope size probe"),
    ("SELECT 1 FROM memory_messages m WHERE m.search_tsv", "SQL: common-word probe"),
    ("SELECT 1 FROM memory_fts WHERE", "SQL: common-word probe"),
)


def _statement_stage(sql: str) -> str:
    for piece, name in STATEMENTS:
        if piece in sql:
            return name
    return "SQL: other"


class Stages:
    """Per query: stage -> [ms, calls]."""

    def __init__(self) -> None:
        self.current: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        self.queries: list[dict[str, list[float]]] = []

    def add(self, stage: str, ms: float) -> None:
        slot = self.current[stage]
        slot[0] += ms
        slot[1] += 1

    def next_query(self) -> None:
        self.queries.append(dict(self.current))
        self.current = defaultdict(lambda: [0.0, 0])

    @contextlib.contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, (time.perf_counter() - t) * 1000)

    def table(self) -> list[str]:
        names: list[str] = []
        for q in self.queries:
            names.extend(n for n in q if n not in names)
        out = [f"  {'stage':<44} {'p50 ms':>8} {'p95 ms':>8} {'calls/query':>12}"]
        for name in names:
            ms = [q.get(name, [0.0, 0])[0] for q in self.queries]
            calls = statistics.mean(q.get(name, [0.0, 0])[1] for q in self.queries)
            out.append(
                f"  {name:<44} {statistics.median(ms):8.2f} {_pct(ms, 0.95):8.2f} {calls:12.2f}"
            )
        return out


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


class _TimedConnect:
    """``engine.connect()`` whose checkout (pool, pre-ping) and check-in are timed."""

    def __init__(self, inner: Any, stages: Stages) -> None:
        self.inner, self.stages = inner, stages

    async def __aenter__(self) -> Any:
        with self.stages.timed("connection checkout (incl. pre-ping)"):
            return await self.inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        with self.stages.timed("connection check-in (reset)"):
            return await self.inner.__aexit__(*exc)


class _TimedEngine:
    def __init__(self, engine: Any, stages: Stages) -> None:
        self._engine, self._stages = engine, stages

    def connect(self) -> _TimedConnect:
        return _TimedConnect(self._engine.connect(), self._stages)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def _wrap_async(stages: Stages, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        with stages.timed(stage):
            return await fn(*args, **kwargs)

    return wrapper


def _wrap_sync(stages: Stages, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with stages.timed(stage):
            return fn(*args, **kwargs)

    return wrapper


@contextlib.contextmanager
def instrument(svc: Any, stages: Stages) -> Iterator[None]:
    """Install the timers on ``svc`` and memory's modules; undo them on exit."""
    from gigi_memory.embedding import vectors
    from gigi_memory.search import hybrid, lexical, reads, tools, vecsearch
    from sqlalchemy import event

    patches: list[tuple[Any, str, Any]] = []
    missing = object()

    def patch(owner: Any, name: str, value: Any) -> None:
        patches.append((owner, name, vars(owner).get(name, missing)))
        setattr(owner, name, value)

    patch(
        svc.vectors,
        "query_vector",
        _wrap_async(stages, "embed the query", svc.vectors.query_vector),
    )
    patch(
        svc.vectors,
        "embedder",
        _wrap_async(stages, "  of which resolving the embedder", svc.vectors.embedder),
    )
    patch(svc.vectors, "embed", _wrap_async(stages, "  of which the embedding", svc.vectors.embed))
    patch(tools, "_ready", _wrap_async(stages, "policy check + writer flush", tools._ready))
    patch(tools, "resolve_scope", _wrap_async(stages, "resolve the scope", tools.resolve_scope))
    patch(reads, "word_counts", _wrap_async(stages, "FTS: store counts", reads.word_counts))
    patch(reads, "scope_counts", _wrap_async(stages, "FTS: scope counts", reads.scope_counts))
    patch(reads, "collection", _wrap_async(stages, "FTS: scope size", reads.collection))
    patch(reads, "followers", _wrap_async(stages, "FTS: replies' predecessors", reads.followers))
    patch(
        hybrid,
        "lexical_path",
        _wrap_async(stages, "full-text path (all of it)", hybrid.lexical_path),
    )
    patch(
        reads,
        "fulltext_candidates",
        _wrap_async(stages, "FTS path (words + statement)", reads.fulltext_candidates),
    )
    patch(vecsearch, "search", _wrap_async(stages, "vector path (all of it)", vecsearch.search))
    patch(
        vecsearch,
        "_score",
        _wrap_sync(stages, "  of which NumPy scoring (SQLite)", vecsearch._score),
    )
    patch(
        vecsearch,
        "_messages",
        _wrap_async(stages, "  of which the hits' rows (SQLite)", vecsearch._messages),
    )
    if hasattr(vectors, "QueryEmbedding"):  # not in code before it (a before/after run)
        patch(
            vectors.QueryEmbedding,
            "recorded",
            _wrap_async(stages, "wait for the query's usage row", vectors.QueryEmbedding.recorded),
        )
    patch(lexical, "fuse", _wrap_sync(stages, "fusion (+ recency when asked)", lexical.fuse))
    patch(tools, "render", _wrap_sync(stages, "render hits (incl. unseal)", tools.render))
    patch(svc, "unseal", _wrap_sync(stages, "  of which unseal", svc.unseal))
    patch(svc, "engine", _TimedEngine(svc.engine, stages))
    dialect = svc.engine.sync_engine.dialect
    patch(dialect, "do_ping", _wrap_sync(stages, "  of which pre-ping (SELECT 1)", dialect.do_ping))
    started: dict[int, tuple[float, str]] = {}

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        started[id(cursor)] = (time.perf_counter(), _statement_stage(statement))

    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        t, stage = started.pop(id(cursor), (None, ""))
        if t is not None:
            stages.add(stage, (time.perf_counter() - t) * 1000)

    sync_engine = svc.engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", before)
    event.listen(sync_engine, "after_cursor_execute", after)
    try:
        yield
    finally:
        event.remove(sync_engine, "before_cursor_execute", before)
        event.remove(sync_engine, "after_cursor_execute", after)
        for owner, name, value in reversed(patches):
            if value is missing:
                delattr(owner, name)  # a method again, not an instance attribute
            else:
                setattr(owner, name, value)


async def profile(svc: Any, handler: Callable[[str], Any], queries: list[str]) -> list[str]:
    """Run ``handler`` over ``queries`` with the timers in; the stage table's lines."""
    stages = Stages()
    with instrument(svc, stages):
        for q in queries:
            t = time.perf_counter()
            await handler(q)
            stages.add("handler, wall", (time.perf_counter() - t) * 1000)
            stages.next_query()
    return stages.table()
