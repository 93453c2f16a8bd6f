"""The port's own checks: what counts as a hit, and what a scope admits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gigi_core.retrieval import Citation, Hit, RetrievalError, Retriever, Scope
from gigi_core.retrieval.port import as_hit, check_hit
from gigi_core.testing import FakeRetriever


def test_hits_from_dicts_and_what_is_malformed() -> None:
    made = as_hit(
        {
            "source_id": "memory:msg:1",
            "kind": "message",
            "text": "hello",
            "channel_id": "c1",
            "citation": {"label": "#c1", "url": "https://discord.com/channels/1/2/3"},
            "paths": ["fulltext"],
        }
    )
    assert made.citation == Citation("#c1", "https://discord.com/channels/1/2/3")
    assert made.paths == ("fulltext",)
    naive = datetime(2026, 1, 1)  # no time zone: the point of the check
    bad = {
        "source_id must look like": Hit("no-namespace", "message", "x", "c1"),
        "text must be a non-empty": Hit("m:x:1", "message", "  ", "c1"),
        "timezone-aware": Hit("m:x:1", "message", "x", "c1", timestamp=naive),
        "between 0 and 1": Hit("m:x:1", "message", "x", "c1", confidence=1.5),
        "confidence must be a number": Hit("m:x:1", "message", "x", "c1", confidence=True),
        "citation must be": Hit("m:x:1", "message", "x", "c1", citation="#c1"),  # type: ignore[arg-type]
    }
    for problem, hit in bad.items():
        assert problem in (check_hit(hit) or ""), problem
    with pytest.raises(ValueError, match="not a hit"):
        as_hit({"source_id": "m:x:1", "nonsense": 1})
    with pytest.raises(ValueError, match="not a hit: int"):
        as_hit(3)


def test_scope_admits_visible_channels_and_own_personal_items_only() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    scope = Scope("g1", frozenset({"c1"}), user_id="u1")
    assert scope.admits(Hit("m:x:1", "message", "x", "c1", when))
    assert not scope.admits(Hit("m:x:2", "message", "x", "c2", when))
    assert scope.admits(Hit("m:x:3", "summary", "x", None, user_id="u1"))
    assert not scope.admits(Hit("m:x:4", "summary", "x", None, user_id="u2"))
    assert not Scope("g1", frozenset()).admits(Hit("m:x:5", "summary", "x", None, user_id="u1"))
    with pytest.raises(RetrievalError, match="frozenset"):
        Scope("g1", {"c1"})  # type: ignore[arg-type]
    assert isinstance(FakeRetriever("notes"), Retriever)


def test_a_malformed_citation_is_one_malformed_hit_not_an_error() -> None:
    """A TypeError from a bad citation mapping must not escape as_hit (it would sink every path)."""
    from gigi_core.retrieval.port import as_hit

    with pytest.raises(ValueError, match="not a hit"):
        as_hit({"source_id": "x:y:1", "kind": "message", "text": "t", "citation": {"lbl": "x"}})
