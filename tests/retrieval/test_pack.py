"""Pack assembly: section order, labels, stale markers, pinned items, budgets and trimming,
restore handles across turns. ``assemble`` is pure, so these need no kernel."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from gigi_core.context.pack import Candidate, PackState, assemble
from gigi_core.context.tokens import count_tokens, cut_to_tokens
from gigi_core.retrieval import RetrievalSettings
from gigi_core.testing import assert_pack
from gigi_core.testing.retrieval import hit

NOW = datetime(2026, 12, 1, tzinfo=UTC)
S = RetrievalSettings()


def cands() -> list[Candidate]:
    return [
        Candidate(hit("memory:msg:1", "we moved to postgres", "c1", when=NOW), 0.05, "memory"),
        Candidate(
            hit("knowledge:decision:2", "Use Postgres 17", "c1", kind="decision", when=NOW),
            0.04,
            "knowledge",
        ),
        Candidate(
            hit("knowledge:summary:3", "Week of upgrades", "c2", kind="summary", when=NOW),
            0.03,
            "knowledge",
        ),
        Candidate(
            hit("knowledge:action:4", "Ana upgrades staging", "c1", kind="action", when=NOW),
            0.02,
            "knowledge",
        ),
        Candidate(
            hit("knowledge:signal:5", "db is a hot topic", "c2", kind="signal", when=NOW),
            0.01,
            "knowledge",
        ),
    ]


def test_sections_follow_seed_order_and_labels_count_from_one() -> None:
    pack = assemble(cands(), mode="memory", settings=S, now=NOW)
    assert_pack(
        pack,
        order=[
            "knowledge:decision:2",
            "knowledge:action:4",
            "knowledge:signal:5",
            "knowledge:summary:3",
            "memory:msg:1",
        ],
        sections=[
            "Relevant Decisions",
            "Relevant Actions",
            "Related Context",
            "Summaries",
            "Messages",
        ],
        labels={"knowledge:decision:2": 1, "memory:msg:1": 5},
    )
    text = pack.render()
    assert "[1] #c1 · 2026-12-01 — Use Postgres 17" in text
    assert pack.labels[5] == "#c1 · 2026-12-01"
    assert pack.citations[5].label == "#c1 · 2026-12-01" and pack.citations[5].url is None
    trace = pack.trace()
    assert trace["sections"] == {
        "decisions": 1, "actions": 1, "related": 1, "summaries": 1, "messages": 1,
    }  # fmt: skip
    assert "postgres" not in json.dumps(trace).lower()  # ids and counts only
    assert json.loads(json.dumps(pack.state.to_dict())) == pack.state.to_dict()


def test_stale_markers_for_edited_superseded_and_old_items() -> None:
    old = NOW - timedelta(days=400)
    items = [
        Candidate(hit("m:x:1", "edited one", "c1", when=NOW, edited=True), 0.3, "m"),
        Candidate(hit("m:x:2", "replaced", "c1", when=NOW, superseded=True), 0.2, "m"),
        Candidate(hit("m:x:3", "ancient", "c1", when=old), 0.1, "m"),
        Candidate(hit("m:x:4", "fresh", "c1", when=NOW), 0.05, "m"),
    ]
    text = assemble(items, mode="memory", settings=S, now=NOW).render()
    assert "[1] #c1 · 2026-12-01 (stale: edited since indexed) — edited one" in text
    assert "(stale: superseded) — replaced" in text
    assert "(stale: older than 180 days) — ancient" in text
    assert "[4] #c1 · 2026-12-01 — fresh" in text
    no_limit = replace(S, freshness_days=0)
    assert "older than" not in assemble(items, mode="m", settings=no_limit, now=NOW).render()


def small(budget: int) -> RetrievalSettings:
    return replace(
        S,
        context_window_tokens=budget,
        reserve_system_tokens=0,
        reserve_tool_result_tokens=0,
        reserve_citation_tokens=0,
        reserve_restore_tokens=0,
        reserve_answer_tokens=0,
    )


def test_trimming_drops_lowest_score_first_and_never_pinned() -> None:
    text = "word " * 40  # about 70 estimated tokens per line
    items = [
        Candidate(hit(f"m:t:{n}", f"{text}{n}", "c1", when=NOW), 1.0 - n / 10, "m")
        for n in range(6)
    ]
    items[5] = replace(items[5], hit=replace(items[5].hit, pinned=True))  # lowest, but pinned
    pack = assemble(items, mode="memory", settings=small(420), now=NOW)
    assert_pack(pack, kept=["m:t:0", "m:t:1", "m:t:5"], dropped=["m:t:2", "m:t:3", "m:t:4"])
    assert pack.used_tokens <= pack.budget_tokens == 420
    again = assemble(list(reversed(items)), mode="memory", settings=small(420), now=NOW)
    assert again.render() == pack.render()  # deterministic whatever the input order


def test_pinned_items_alone_over_budget_are_cut_deterministically() -> None:
    long = "pinned context " * 200
    pinned = [
        Candidate(hit(f"m:p:{n}", f"{n} {long}", "c1", when=NOW, pinned=True), 1.0, "pinned")
        for n in range(3)
    ]
    other = Candidate(hit("m:o:1", "other", "c1", when=NOW), 0.5, "m")
    pack = assemble([*pinned, other], mode="memory", settings=small(600), now=NOW)
    trace = pack.trace()
    assert trace["pinned_truncated"] == ["m:p:0"]
    assert trace["pinned_dropped"] == ["m:p:1", "m:p:2"]
    assert trace["dropped"] == ["m:o:1"]
    assert pack.used_tokens <= 600
    assert "(truncated to fit)" in pack.render() and pack.render().rstrip().endswith("…")
    assert assemble([*pinned, other], mode="memory", settings=small(600), now=NOW).render() == (
        pack.render()
    )


def test_restore_handles_unchanged_changed_and_withdrawn() -> None:
    first = assemble(cands(), mode="memory", settings=S, now=NOW)
    state = PackState.from_dict(json.loads(json.dumps(first.state.to_dict())))
    assert state == first.state
    turn2 = cands()
    turn2[0] = replace(turn2[0], hit=replace(turn2[0].hit, text="we moved to postgres 17"))
    turn2 = [c for c in turn2 if c.hit.source_id != "knowledge:signal:5"]
    turn2.append(Candidate(hit("memory:msg:9", "new one", "c1", when=NOW), 0.001, "memory"))
    pack = assemble(
        turn2, mode="memory", settings=S, now=NOW, previous=state, gone=["knowledge:signal:5"]
    )
    assert_pack(
        pack,
        kept=["memory:msg:1", "memory:msg:9"],
        unchanged=["knowledge:decision:2", "knowledge:action:4", "knowledge:summary:3"],
        withdrawn=["knowledge:signal:5"],
        labels={"memory:msg:1": 5, "knowledge:decision:2": 1, "memory:msg:9": 6},
        absent_text=["db is a hot topic", "Use Postgres 17"],
    )
    text = pack.render()
    assert "unchanged: [1], [2], [4]" in text
    assert "withdrawn: [3]" in text
    assert "[5] #c1 · 2026-12-01 (changed since you last saw it) — we moved to postgres 17" in text
    assert pack.trace()["previous_fingerprint"] == first.state.fingerprint
    assert pack.state.fingerprint != first.state.fingerprint
    assert "knowledge:signal:5" not in pack.state.items
    same = assemble(turn2, mode="memory", settings=S, now=NOW, previous=pack.state)
    assert same.items == [] and same.state.fingerprint == pack.state.fingerprint


def test_broken_saved_state_is_ignored() -> None:
    assert PackState.from_dict({"v": 1, "items": {"x": [1]}}) is None
    assert PackState.from_dict({"v": 2}) is None and PackState.from_dict(None) is None


def test_token_estimate_is_conservative_and_cut_respects_it() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20  # ~200 real tokens
    assert count_tokens(text, "openai") >= 250 and count_tokens(text, None) >= 300
    assert count_tokens("日本語のテキスト", "anthropic") >= 8  # ~3 bytes a character
    cut = cut_to_tokens(text, 50, "openai")
    assert cut.endswith("…") and count_tokens(cut, "openai") <= 50
    assert cut_to_tokens("short", 50) == "short"
