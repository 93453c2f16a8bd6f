"""memory.search's ranking on both backends (issue 29): stop words, members' names, the
message before a reply, recency only when asked, and the bad input the issue lists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memory_helpers import call, enable, message, publish, rows

from gigi_core import InvalidArguments, ToolExecutionError

_T0 = [datetime.now(UTC)]  # set when a test enables the channel: live messages come after it


def said(text: str, author: str, name: str | None, minute: int, **fields: Any) -> Any:
    return message(
        text,
        author_id=author,
        author_name=name,
        created_at=_T0[0] + timedelta(minutes=minute),
        **fields,
    )


async def lexical_only(kernel: Any) -> None:
    """Full text alone: these tests pin the lexical ranking, not the embedder's."""
    await enable(kernel, days=3650)
    await call(kernel, "policy", embeddings="off")
    _T0[0] = datetime.now(UTC) + timedelta(seconds=1)


async def search(kernel: Any, query: str, **args: Any) -> list[dict[str, Any]]:
    return (await call(kernel, "search", query=query, **args))["hits"]


async def test_stop_words_do_not_rank(kernel) -> None:
    await lexical_only(kernel)
    await publish(
        kernel,
        said("what did we do and what did we say about it", "u1", "Ann", 0),
        said("the release date moves to friday", "u2", "Bob", 1),
    )
    hits = await search(kernel, "what did we decide about the release?")
    assert hits[0]["snippet"] == "the release date moves to friday"
    assert len(hits) == 1  # the question's function words match nothing on their own
    # Only stop words: they are all kept, so the question still finds what holds them.
    only = await search(kernel, "what did we")
    assert [h["snippet"] for h in only] == ["what did we do and what did we say about it"]


async def test_a_members_name_finds_what_they_wrote(kernel) -> None:
    await lexical_only(kernel)
    await publish(
        kernel,
        said("the support group was great", "u2", "Melanie", 0),
        said("I went to the support group yesterday", "u1", "Caroline", 1),
        said("support group again next week", "u3", "Dave", 2),
    )
    hits = await search(kernel, "What did Caroline say about the support group?")
    assert hits[0]["author_id"] == "u1"
    # A name alone: what that member wrote.
    alone = await search(kernel, "Caroline")
    assert [h["author_id"] for h in alone] == ["u1"]
    async with kernel.db.engine.connect():
        names = await rows(kernel, "SELECT author_id, name, name_words FROM memory_authors")
    assert sorted((r.author_id, r.name_words) for r in names) == [
        ("u1", "caroline"),
        ("u2", "melanie"),
        ("u3", "dave"),
    ]


async def test_a_name_two_members_share_finds_both(kernel) -> None:
    await lexical_only(kernel)
    await publish(
        kernel,
        said("pizza tonight?", "u3", "Jo", 0),
        said("pizza is the best lunch", "u1", "Sam", 1),
        said("I ordered pizza for the team", "u2", "Sam Lee", 2),
        said("no pizza for me", "u4", "Kim", 3),
    )
    hits = await search(kernel, "sam pizza")
    assert {h["author_id"] for h in hits[:2]} == {"u1", "u2"}


async def test_a_renamed_member_is_found_by_old_and_new_name(kernel) -> None:
    await lexical_only(kernel)
    await publish(
        kernel,
        said("my tomatoes are ripe", "u1", "Caroline", 0),
        said("tomatoes everywhere this year", "u2", "Mel", 1),
        said("the tomatoes went into a sauce", "u1", "Carrie", 2),
        said("tomatoes again", "u3", "Dave", 3),
    )
    for name in ("Caroline", "Carrie"):
        hits = await search(kernel, f"{name} tomatoes")
        assert [h["author_id"] for h in hits[:2]] == ["u1", "u1"], name


async def test_a_deleted_members_names_go_with_their_data(kernel) -> None:
    await lexical_only(kernel)
    await publish(kernel, said("hello garden", "u1", "Caroline", 0), said("hi", "u2", "Mel", 1))
    exported = await kernel.privacy.export("u1", "g1")
    assert "Caroline" in str(exported)
    await kernel.privacy.delete("u1", "g1")
    left = await rows(kernel, "SELECT author_id FROM memory_authors")
    assert [r.author_id for r in left] == ["u2"]
    assert await search(kernel, "Caroline") == []


async def test_a_matching_reply_is_credited_with_what_it_answers(kernel) -> None:
    await lexical_only(kernel)
    await publish(
        kernel,
        said("when do we ship the release", "u1", "Ann", 0),
        said("friday the release goes out", "u2", "Bob", 1),
        said("unrelated chatter about lunch", "u3", "Cy", 2),
        said("friday the release goes out", "u4", "Di", 3),  # the same words, newer
    )
    hits = await search(kernel, "release friday")
    # Equal words, but the first answers a question about the release: it ranks first
    # (without the credit the newer copy would, as ties go to the newest).
    assert [h["author_id"] for h in hits[:2]] == ["u2", "u4"]
    assert hits[0]["score"] > hits[1]["score"]
    # A message that does not match gains nothing from the match before it.
    assert "u3" not in {h["author_id"] for h in hits}


async def test_recency_counts_only_when_the_query_asks_for_time(kernel) -> None:
    await lexical_only(kernel)
    await publish(
        kernel,
        said("garden tomatoes and garden beans", "u1", "Ann", 0),
        said("garden tomatoes", "u2", "Bob", 60),
    )
    plain = {h["author_id"]: h["score"] for h in await search(kernel, "garden tomatoes")}
    timed = {h["author_id"]: h["score"] for h in await search(kernel, "latest garden tomatoes")}
    # "latest" matches nothing itself; the newest hit gains the most from the prior.
    assert timed["u2"] - plain["u2"] > timed["u1"] - plain["u1"] > 0


async def test_a_query_in_another_script(kernel) -> None:
    await lexical_only(kernel)
    await publish(
        kernel,
        said("数据库 迁移 完成了", "u1", "李", 0),
        said("η βάση δεδομένων είναι έτοιμη", "u2", "Νίκος", 1),
        said("the database is ready", "u3", "Ann", 2),
    )
    assert [h["author_id"] for h in await search(kernel, "迁移")] == ["u1"]
    assert [h["author_id"] for h in await search(kernel, "δεδομένων")] == ["u2"]
    assert (await search(kernel, "Νίκος"))[0]["author_id"] == "u2"  # a name in its script


async def test_a_5000_character_query(kernel) -> None:
    from gigi_memory.policy import now_ms
    from gigi_memory.search import hybrid as memory_search
    from gigi_memory.search import reads
    from gigi_memory.service import service_of

    await lexical_only(kernel)
    await publish(kernel, said("needle in the haystack", "u1", "Ann", 0))
    long = ("needle " + "hay " * 1250)[:5000]
    with pytest.raises(InvalidArguments, match="query"):  # the tool's own bound: 300
        await kernel.call_tool(
            "memory.search", {"query": long}, actor=_admin(), guild_id="g1", channel_id="c1"
        )
    # Retrieval for context packs passes longer text: its words are capped, never an error.
    f = reads.Filters("g1", ("c1",), False, now_ms())
    fused, _ = await memory_search.hybrid(service_of(kernel), f, long, 5)
    assert [row.author_id for row, _, _ in fused] == ["u1"]


async def test_names_from_an_import_are_searchable(kernel, tmp_path) -> None:
    import json

    from gigi_memory.ingest.importer import read_export, run_import

    await lexical_only(kernel)
    path = tmp_path / "export.json"
    messages = [
        {
            "id": str(1000 + i),
            "type": "Default",
            "timestamp": (_T0[0] + timedelta(minutes=i)).isoformat(),
            "content": text,
            "author": {"id": author, "name": name.lower(), "nickname": name, "isBot": False},
        }
        for i, (author, name, text) in enumerate(
            [("u1", "Caroline", "the adoption agency called"), ("u2", "Mel", "adoption news?")]
        )
    ]
    path.write_text(
        json.dumps({"guild": {"id": "g1"}, "channel": {"id": "c1"}, "messages": messages})
    )
    report = await run_import(kernel, read_export(path), guild_id="g1")
    assert report.imported == 2
    assert (await search(kernel, "Caroline adoption"))[0]["author_id"] == "u1"


async def test_closing_queues_the_last_embedding_kick(kernel) -> None:
    """A `gigi memory import` exits right after its last commit: the kick it left must
    become a queued memory.embed job, not be cancelled with the process."""
    from gigi_memory.service import service_of

    await enable(kernel)
    svc = service_of(kernel)
    svc.vectors.kick({"g1"})
    await svc.vectors.close()
    jobs = await kernel.jobs.list(name="memory.embed")
    assert [j.status for j in jobs] == ["queued"]


def test_rank_settings_come_from_the_environment() -> None:
    from gigi_memory.search.lexical import RankSettings

    got = RankSettings.from_env(
        {"GIGI_MEMORY_VECTOR_WEIGHT": "0.5", "GIGI_MEMORY_CANDIDATES": "50"}
    )
    assert (got.vector_weight, got.candidates, got.k1) == (0.5, 50, 1.2)
    with pytest.raises(ValueError, match="GIGI_MEMORY_K1: expected a number"):
        RankSettings.from_env({"GIGI_MEMORY_K1": "lots"})
    with pytest.raises(ValueError, match="GIGI_MEMORY_CANDIDATES: must be positive"):
        RankSettings.from_env({"GIGI_MEMORY_CANDIDATES": "0"})


def test_fusion_scores_unseen_rows_at_the_vector_lists_floor() -> None:
    from types import SimpleNamespace

    from gigi_memory.search.lexical import RankSettings, fuse

    a, b, c = (SimpleNamespace(id=i, created_ms=i) for i in (1, 2, 3))
    rank = RankSettings(vector_weight=0.5)
    # b is only a word match; the vector list was full (cut at its limit), so b scores the
    # lowest cosine it holds, 0.4: nothing it did not return can be nearer.
    fused = fuse(
        {1: (a, 2.0), 2: (b, 2.0)}, {1: (a, 0.9), 3: (c, 0.4)}, False, {1: 1, 2: 2, 3: 3}, 3, rank
    )
    assert [(h.row.id, h.score, h.paths) for h in fused] == [
        (1, 1.45, ("fulltext", "vector")),
        (2, 1.2, ("fulltext",)),
        (3, 0.2, ("vector",)),
    ]
    # A short vector list holds every row above the floor: an unseen row gets no cosine.
    fused = fuse({2: (b, 2.0)}, {3: (c, 0.4)}, True, {2: 2, 3: 3}, 3, rank)
    assert [(h.row.id, h.score) for h in fused] == [(2, 1.0), (3, 0.2)]


def _admin() -> Any:
    from memory_helpers import ADMIN

    return ADMIN


async def test_forgetting_waits_for_a_name_batch_already_in_flight(kernel) -> None:
    """A batch the background flush took before the delete must not land after it."""
    import asyncio

    from gigi_memory.service import service_of

    await enable(kernel)
    authors = service_of(kernel).authors
    authors.note("g1", "u9", "Zed", 1)
    await asyncio.sleep(0)  # the background flush takes the batch and starts writing
    assert not authors._pending
    await authors.forget("u9", "g1")
    await asyncio.sleep(0.05)
    assert await rows(kernel, "SELECT name FROM memory_authors WHERE author_id = 'u9'") == []


async def test_a_reply_that_matches_only_by_its_authors_name_is_found(kernel) -> None:
    """The engines' candidates hold the query's words; a reply by the member the query
    names, answering a match, holds none of them and is fetched through its predecessor."""
    await lexical_only(kernel)
    await publish(
        kernel,
        said("the garden looks nice today", "u2", "Caroline", 0),
        said("when do we ship the release", "u1", "Ann", 1),
        said("friday works for me", "u2", "Caroline", 2),
    )
    hits = [h["snippet"] for h in await search(kernel, "what did Caroline say about the release")]
    assert set(hits[:2]) == {"when do we ship the release", "friday works for me"}


async def test_a_bad_ranking_setting_refuses_the_search_by_name(kernel, monkeypatch) -> None:
    from gigi_memory.search import lexical

    await lexical_only(kernel)
    await publish(kernel, said("garden tomatoes", "u1", "Ann", 0))
    monkeypatch.setenv("GIGI_MEMORY_VECTOR_WEIGHT", "heavy")
    lexical.settings.cache_clear()
    try:
        with pytest.raises(
            ToolExecutionError, match="GIGI_MEMORY_VECTOR_WEIGHT: expected a number"
        ):
            await kernel.call_tool(
                "memory.search", {"query": "garden"}, actor=_admin(), guild_id="g1", channel_id="c1"
            )
    finally:
        monkeypatch.delenv("GIGI_MEMORY_VECTOR_WEIGHT")
        lexical.settings.cache_clear()
