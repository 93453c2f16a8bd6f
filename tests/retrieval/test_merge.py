"""The merge (seed 004 §10): a golden ranking of a hand-built set, and each factor alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gigi_core.errors import ConfigError
from gigi_core.retrieval import RetrievalSettings, merge
from gigi_core.retrieval.config import apply, for_guild, from_env
from gigi_core.testing.retrieval import hit

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def days(n: float) -> datetime:
    return NOW - timedelta(days=n)


def golden_set() -> dict[str, list]:
    """Three paths over eight records; the comments say why each lands where it does."""
    return {
        "memory": [
            hit("memory:msg:1", "postgres upgrade chosen", "c1", when=days(1), paths=["fulltext"]),
            hit("memory:msg:2", "postgres backup notes", "c1", when=days(40), paths=["fulltext"]),
            hit("memory:msg:3", "postgres in passing", "c2", when=days(2), paths=["vector"]),
            hit("memory:msg:1", "duplicate in one path", "c1", when=days(1)),  # ignored
            hit("memory:msg:4", "old postgres chat", "c2", when=days(400), paths=["fulltext"]),
        ],
        "knowledge": [
            hit("knowledge:decision:9", "We use Postgres 17", "c1", kind="decision",
                when=days(5), confidence=0.95),
            hit("memory:msg:2", "postgres backup notes", "c1", when=days(40)),  # 2nd path
            hit("knowledge:action:5", "Upgrade staging", "c1", kind="action",
                when=days(3), confidence=0.5),
        ],
        "wiki": [
            hit("wiki:page:7", "Postgres runbook", "c3", kind="context", when=None),
            hit("knowledge:decision:9", "We use Postgres 17", "c1", kind="decision",
                when=days(5), confidence=0.95),
        ],
    }  # fmt: skip


def test_golden_ranking_of_a_hand_built_set() -> None:
    ranked = merge(golden_set(), RetrievalSettings(), NOW)
    assert [(r.hit.source_id, round(r.score, 6)) for r in ranked] == [
        # (1/61 + 1/62) x 1.5 (two paths) x 0.918 (5 days) x 0.975 (confidence 0.95)
        ("knowledge:decision:9", 0.043672),
        ("memory:msg:2", 0.026499),  # two paths at rank 2, but 40 days old: x 0.548
        ("memory:msg:1", 0.016113),  # rank 1 of one path, 1 day old
        ("memory:msg:3", 0.015335),  # rank 3: the duplicate above took no rank
        ("knowledge:action:5", 0.011307),  # confidence 0.5 costs a quarter
        ("wiki:page:7", 0.010246),  # rank 1, but undated: one half-life (x 0.625)
        ("memory:msg:4", 0.003907),  # 400 days: at the recency floor (x 0.25)
    ]
    top = ranked[0]
    assert top.paths == ("knowledge", "wiki") and top.ranks == {"knowledge": 1, "wiki": 2}
    assert ranked[1].paths == ("knowledge", "memory.fulltext")
    assert ranked[2].hit.text == "postgres upgrade chosen"  # the first copy in a path wins


def test_multi_path_boost_and_weights() -> None:
    a = hit("x:a:1", "a", "c1", when=NOW)
    b = hit("x:b:1", "b", "c1", when=NOW)
    per_path = {"p": [a, b], "q": [b]}
    s = RetrievalSettings(recency_half_life_days=0)
    scores = {r.hit.source_id: r.score for r in merge(per_path, s, NOW)}
    assert scores["x:a:1"] == pytest.approx(1 / 61)
    assert scores["x:b:1"] == pytest.approx((1 / 62 + 1 / 61) * 1.5)
    no_boost = replace(s, multi_path_boost=1.0)
    assert {r.hit.source_id: r.score for r in merge(per_path, no_boost, NOW)}[
        "x:b:1"
    ] == pytest.approx(1 / 62 + 1 / 61)
    muted = replace(no_boost, path_weights={"q": 0.0})  # q's vote no longer counts
    assert [r.hit.source_id for r in merge(per_path, muted, NOW)] == ["x:a:1", "x:b:1"]
    loud = replace(no_boost, path_weights={"p": 3.0}, rrf_k=1)
    assert merge(per_path, loud, NOW)[0].score == pytest.approx(3 / 2)  # 3 / (1 + 1)


def test_recency_and_confidence_order_otherwise_equal_hits() -> None:
    s = RetrievalSettings()
    fresh, old = hit("x:m:1", "a", "c1", when=days(0)), hit("x:m:2", "b", "c1", when=days(30))
    by_path = {"p": [old], "q": [fresh]}
    ranked = merge(by_path, s, NOW)
    assert [r.hit.source_id for r in ranked] == ["x:m:1", "x:m:2"]
    assert ranked[1].score == pytest.approx(ranked[0].score * (0.25 + 0.75 * 0.5))
    sure = hit("x:m:3", "c", "c1", when=NOW, confidence=0.9)
    unsure = hit("x:m:4", "d", "c1", when=NOW, confidence=0.6)
    ranked = merge({"p": [unsure], "q": [sure]}, s, NOW)
    assert [r.hit.source_id for r in ranked] == ["x:m:3", "x:m:4"]


def test_ties_break_on_source_id_and_limit_applies() -> None:
    hits = [hit(f"x:t:{n}", "t", "c1", when=NOW) for n in range(5)]
    per_path = {f"p{n}": [h] for n, h in enumerate(hits)}
    ranked = merge(per_path, RetrievalSettings(max_hits=3), NOW)
    assert [r.hit.source_id for r in ranked] == ["x:t:0", "x:t:1", "x:t:2"]


def test_settings_from_env_and_guild_config(monkeypatch) -> None:
    monkeypatch.setenv("GIGI_RETRIEVAL_RRF_K", "40")
    monkeypatch.setenv("GIGI_RETRIEVAL_PATH_WEIGHTS", '{"memory": 2}')
    s = from_env()
    assert s.rrf_k == 40 and s.weight("memory") == 2 and s.weight("other") == 1
    guild = for_guild({"retrieval": {"per_path_limit": 5, "path_weights": {"wiki": 0.5}}})
    assert guild.per_path_limit == 5 and guild.rrf_k == 40
    assert dict(guild.path_weights) == {"memory": 2.0, "wiki": 0.5}
    assert RetrievalSettings().pack_budget_tokens == 6500
    with pytest.raises(ConfigError, match="unknown retrieval setting 'rrf'"):
        apply(RetrievalSettings(), {"rrf": 1}, "test")
    with pytest.raises(ConfigError, match="per_path_limit must be a whole number"):
        apply(RetrievalSettings(), {"per_path_limit": 2.5}, "test")
    with pytest.raises(ConfigError, match="rrf_k must be a number >= 0"):
        apply(RetrievalSettings(), {"rrf_k": "nan"}, "test")


def test_one_retriever_keeps_its_own_order_unless_the_query_asks_for_time() -> None:
    """Memory already weighed its sub-paths and the words: merging its list alone must not
    reorder it (issue 29: recency on every query and the sub-path boost pulled it down)."""
    memory = [
        hit("memory:msg:1", "old, found by words", "c1", when=days(300), paths=["fulltext"]),
        hit("memory:msg:2", "found both ways", "c1", when=days(200), paths=["fulltext", "vector"]),
        hit("memory:msg:3", "new, by meaning", "c1", when=days(1), paths=["vector"]),
    ]
    ranked = merge({"memory": memory}, RetrievalSettings(), NOW, recency=False)
    assert [r.hit.source_id for r in ranked] == ["memory:msg:1", "memory:msg:2", "memory:msg:3"]
    assert ranked[1].paths == ("memory.fulltext", "memory.vector")  # still traced
    timed = merge({"memory": memory}, RetrievalSettings(), NOW, recency=True)
    assert timed[0].hit.source_id == "memory:msg:3"  # "latest ...": the newest comes up


def test_the_boost_counts_retrievers_not_one_retrievers_paths() -> None:
    s = RetrievalSettings(recency_half_life_days=0)
    both = hit("memory:msg:1", "x", "c1", paths=["fulltext", "vector"])
    ranked = merge({"memory": [both]}, s, NOW)
    assert ranked[0].score == pytest.approx(1 / 61)  # no boost for memory's own two paths
    agreed = merge({"memory": [both], "knowledge": [both]}, s, NOW)
    assert agreed[0].score == pytest.approx(2 / 61 * 1.5)  # two retrievers agree: boosted


def test_asks_for_time() -> None:
    from gigi_core.retrieval import asks_for_time

    assert asks_for_time(["what", "was", "the", "latest", "release"])
    assert asks_for_time(["what", "happened", "last", "week"])
    assert not asks_for_time(["when", "did", "caroline", "go", "to", "the", "conference"])
