"""Segments and vectors: the embedding job, hybrid search, edits, model changes, failures."""

from __future__ import annotations

import pytest
from gigi_memory import segments
from gigi_memory.service import service_of
from memory_helpers import (
    ADMIN,
    ago,
    call,
    count,
    embed_all,
    enable,
    message,
    publish,
    segments_of,
)

from gigi_core.events import MessageEdited


def test_chunking_cuts_long_text_at_spaces_and_skips_blanks() -> None:
    text = ("word " * 900).strip()  # 4,499 characters
    spans = segments.chunk(text)
    assert len(spans) == 5 and spans[0].start == 0 and spans[-1].end == len(text)
    assert all(sp.end - sp.start <= segments.SEGMENT_CHARS for sp in spans)
    assert all(text[sp.end] == " " for sp in spans[:-1])  # never inside a word
    assert segments.chunk("   ") == [] and segments.chunk("") == []
    assert [(s.start, s.end) for s in segments.chunk("x" * 2500)] == [
        (0, 1000),
        (1000, 2000),
        (2000, 2500),
    ]


async def test_the_job_embeds_with_model_and_dims_on_every_row(kernel) -> None:
    await enable(kernel)
    long = " ".join(["the deploy pipeline broke again"] * 100)  # ~3,100 characters
    a, b = message("we ship the new version on friday"), message(long)
    await publish(kernel, a, b, message("🎉🎉"))
    status = await call(kernel, "status")
    assert status["vectors"]["messages_without_vectors"] == 3  # countable before any vector
    assert await count(kernel, text="friday") == 1
    await embed_all(kernel)
    found = await segments_of(kernel)
    assert {r.model for r in found} == {"local:wordllama-l2-supercat-256"}
    assert {r.dims for r in found} == {256}
    assert [r.seq for r in found if r.message_id == b.message_id] == [0, 1, 2, 3]
    assert len([r for r in found if r.message_id == a.message_id]) == 1
    status = await call(kernel, "status")
    assert status["vectors"] == {
        "source": "local",
        "model": "local:wordllama-l2-supercat-256",
        "messages_without_vectors": 0,
    }
    usage = await kernel.llm.usage("g1")
    assert {(u.provider, u.purpose) for u in usage} == {("local", "embedding")}


async def test_search_is_hybrid_and_says_which_path_found_each_hit(kernel) -> None:
    await enable(kernel)
    await publish(
        kernel,
        message("we ship the new version on friday"),
        message("postgres is our database now"),
        message("my cat likes fish"),
        message("release notes are in the wiki"),
    )
    await embed_all(kernel)
    result = await call(kernel, "search", query="release shipping date")
    assert result["paths"] == ["fulltext", "vector"]
    by_text = {h["snippet"]: h["paths"] for h in result["hits"]}
    assert by_text["release notes are in the wiki"] == ["fulltext", "vector"]
    assert by_text["we ship the new version on friday"] == ["vector"]  # no shared word
    assert "my cat likes fish" not in by_text  # unrelated: below the similarity floor
    assert result["hits"][0]["snippet"] == "release notes are in the wiki"  # found by both


async def test_search_never_leaves_the_scope_through_vectors(kernel) -> None:
    await enable(kernel)
    await enable(kernel, channel="c2")
    await publish(
        kernel,
        message("we ship the new version on friday"),
        message("we ship the new version on friday", channel_id="c2", author_id="u2"),
    )
    await embed_all(kernel)
    hits = (await call(kernel, "search", query="shipping release"))["hits"]
    assert [h["channel_id"] for h in hits] == ["c1"]
    assert (await call(kernel, "search", query="shipping the release", author="u2"))["hits"] == []


async def test_visible_guild_uses_the_channels_the_surface_reports(kernel) -> None:
    for channel in ("c1", "c2", "c3"):
        await enable(kernel, channel=channel)
    await publish(
        kernel,
        message("postgres one"),
        message("postgres two", channel_id="c2"),
        message("postgres three", channel_id="c3"),
        message("postgres thread", channel_id="t2", parent_channel_id="c2", channel_kind="thread"),
    )
    await embed_all(kernel)

    async def lister() -> frozenset[str]:
        return frozenset({"c1", "c2", "unknown"})

    async def go(action: str, **args):
        outcome = await kernel.call_tool(
            f"memory.{action}",
            args | {"scope": "visible-guild"},
            actor=ADMIN,
            guild_id="g1",
            channel_id="c1",
            visible_channels=lister,
        )
        return outcome.result

    counted = await go("count", text="postgres")
    assert counted["count"] == 3 and counted["scope"]["channel_ids"] == ["c1", "c2"]
    assert "note" not in counted["scope"]
    hits = (await go("search", query="postgres"))["hits"]
    assert {h["channel_id"] for h in hits} == {"c1", "c2", "t2"}


async def test_an_edit_replaces_segments_and_vectors(kernel) -> None:
    await enable(kernel)
    first = message("my cat likes fish")
    await publish(kernel, first)
    await embed_all(kernel)
    (old,) = await segments_of(kernel, first.message_id)
    await publish(
        kernel,
        MessageEdited(
            guild_id="g1",
            message_id=first.message_id,
            channel_id="c1",
            text="we ship the new version on friday",
            edited_at=ago(seconds=0),
        ),
    )
    assert await segments_of(kernel, first.message_id) == []  # gone with the edit, at once
    assert (await call(kernel, "status"))["vectors"]["messages_without_vectors"] == 1
    await embed_all(kernel)
    (new,) = await segments_of(kernel, first.message_id)
    assert new.id != old.id and new.span_end == len("we ship the new version on friday")
    hits = (await call(kernel, "search", query="pets and animals"))["hits"]
    assert hits == []  # the old meaning is not findable any more
    hits = (await call(kernel, "search", query="shipping release"))["hits"]
    assert [h["paths"] for h in hits] == [["vector"]]


async def test_an_edit_during_embedding_never_gets_stale_vectors(kernel) -> None:
    from gigi_memory import pending
    from gigi_memory.vectors import _embed_batch

    await enable(kernel)
    first = message("my cat likes fish")
    await publish(kernel, first)
    svc = service_of(kernel)
    embedder = await svc.vectors.embedder("g1")
    batch = await pending.claim(svc.engine, svc.dialect, "g1", embedder.key, 10, 30.0)
    assert [r.message_id for r in batch.rows] == [first.message_id]  # read before the edit
    assert (await pending.claim(svc.engine, svc.dialect, "g1", embedder.key, 10, 30.0)).rows == []
    await publish(
        kernel,
        MessageEdited(
            guild_id="g1",
            message_id=first.message_id,
            channel_id="c1",
            text="totally different words",
            edited_at=ago(seconds=0),
        ),
    )
    done = await _embed_batch(svc, embedder, "g1", batch)
    assert done == {"messages": 0, "segments": 0, "skipped": 1}
    assert await segments_of(kernel) == []
    await embed_all(kernel)  # the batch gave its claim back: the new text is embedded now
    (seg,) = await segments_of(kernel, first.message_id)
    assert seg.span_end == len("totally different words")


async def test_a_claimed_batch_is_skipped_until_its_lease_expires(kernel) -> None:
    """Two batches never hold one message; a dead batch's messages are free after the lease,
    and its late write then changes nothing."""
    from gigi_memory import pending
    from gigi_memory.vectors import _embed_batch

    await enable(kernel)
    await publish(kernel, *[message(f"note {i} about postgres") for i in range(5)])
    svc = service_of(kernel)
    key = (await svc.vectors.embedder("g1")).key
    first = await pending.claim(svc.engine, svc.dialect, "g1", key, 3, 30.0)
    second = await pending.claim(svc.engine, svc.dialect, "g1", key, 3, 30.0)
    assert len(first.rows) == 3 and len(second.rows) == 2
    assert not {r.id for r in first.rows} & {r.id for r in second.rows}
    assert (await pending.claim(svc.engine, svc.dialect, "g1", key, 3, 30.0)).rows == []
    wait = await pending.next_free_ms(svc.engine, svc.dialect, "g1", key, 30.0)
    assert wait is not None and 25_000 < wait <= 30_000
    # A lease of 0 s: the first batch's worker counts as dead, its rows are claimed again.
    third = await pending.claim(svc.engine, svc.dialect, "g1", key, 10, 0.0)
    assert {r.id for r in third.rows} == {r.id for r in first.rows} | {r.id for r in second.rows}
    embedder = await svc.vectors.embedder("g1")
    late = await _embed_batch(svc, embedder, "g1", first)  # the dead batch, late
    assert late == {"messages": 0, "segments": 0, "skipped": 3}
    assert await segments_of(kernel) == []
    done = await _embed_batch(svc, embedder, "g1", third)
    assert done == {"messages": 5, "segments": 5, "skipped": 0}
    found = await segments_of(kernel)
    assert len(found) == 5 and len({r.message_row_id for r in found}) == 5
    assert await pending.next_free_ms(svc.engine, svc.dialect, "g1", key, 30.0) is None


async def test_the_embedder_failing_leaves_messages_searchable_and_the_job_retries(
    flaky_kernel,
) -> None:
    kernel = flaky_kernel
    provider = kernel.registry.provider("flaky")
    provider.failures = 2
    await enable(kernel)
    await publish(kernel, message("postgres release plan"), message("lunch at noon"))
    await embed_all(kernel)  # two attempts fail, the job's retries succeed
    jobs = await kernel.jobs.list(name="memory.embed")
    assert jobs and all(j.status == "done" for j in jobs)
    assert sum(j.attempts - 1 for j in jobs) == 2  # (one job, or two if the writer split the batch)
    assert len(await segments_of(kernel)) == 2

    provider.failures = 10_000  # down for good now
    await publish(kernel, message("postgres again later"))
    assert await count(kernel, text="postgres") == 2  # countable at once
    result = await call(kernel, "search", query="postgres")
    assert result["paths"] == ["fulltext"]  # the query could not be embedded either
    assert {h["snippet"] for h in result["hits"]} == {
        "postgres release plan",
        "postgres again later",
    }
    await embed_all(kernel)  # every retry fails; the job gives up, the message waits
    assert [j.status for j in await kernel.jobs.list(name="memory.embed")].count("failed") == 1
    assert (await call(kernel, "status"))["vectors"]["messages_without_vectors"] == 1

    provider.failures = 0  # back: the next run (deferred or the schedule) catches up
    await kernel.jobs.defer("memory.embed", {})
    await embed_all(kernel)
    assert (await call(kernel, "status"))["vectors"]["messages_without_vectors"] == 0
    assert len(await segments_of(kernel)) == 3


async def test_a_new_model_re_embeds_and_never_mixes_dimensions(flaky_kernel) -> None:
    kernel = flaky_kernel
    provider = kernel.registry.provider("flaky")
    await enable(kernel)
    await publish(kernel, message("postgres release plan"), message("release party friday"))
    await embed_all(kernel)
    assert {(r.model, r.dims) for r in await segments_of(kernel)} == {("flaky:words-256", 256)}

    provider.use_model("words-64")
    status = await call(kernel, "status")
    assert status["vectors"]["model"] == "flaky:words-64"
    assert status["vectors"]["messages_without_vectors"] == 2  # the old vectors do not count
    # Until the re-embedding ran, search finds nothing by vector (never 256-d rows for a 64-d query).
    result = await call(kernel, "search", query="release")
    assert all(h["paths"] == ["fulltext"] for h in result["hits"])
    await kernel.jobs.defer("memory.embed", {"guild_id": "g1"})
    await embed_all(kernel)
    assert {(r.model, r.dims) for r in await segments_of(kernel)} == {("flaky:words-64", 64)}
    result = await call(kernel, "search", query="release")
    assert all(h["paths"] == ["fulltext", "vector"] for h in result["hits"])


async def test_embeddings_off_deletes_vectors_and_search_is_full_text(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("we ship the new version on friday"))
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 1
    result = await call(kernel, "policy", embeddings="off")
    assert result["vectors_deleted"] == 1 and await segments_of(kernel) == []
    await publish(kernel, message("another one"))
    await embed_all(kernel)
    assert await segments_of(kernel) == []
    assert (await call(kernel, "search", query="friday"))["paths"] == ["fulltext"]
    assert (await call(kernel, "status"))["vectors"]["messages_without_vectors"] is None
    await call(kernel, "policy", embeddings="local")
    await embed_all(kernel)
    assert len(await segments_of(kernel)) == 2


@pytest.mark.parametrize("forced", ["exact", "hnsw"])
async def test_a_selective_filter_still_finds_the_nearest_allowed(
    kernel, monkeypatch, forced
) -> None:
    from gigi_memory import vecsearch

    monkeypatch.setattr(vecsearch, "EXACT_MAX", 10_000 if forced == "exact" else 0)
    await enable(kernel)
    await publish(
        kernel,
        *[message(f"we ship the new version on friday {i}") for i in range(30)],
        message("the release goes out at the end of the week", author_id="u2"),
    )
    await embed_all(kernel)
    hits = (await call(kernel, "search", query="shipping release", author="u2", limit=1))["hits"]
    assert [(h["author_id"], "vector" in h["paths"]) for h in hits] == [("u2", True)]


@pytest.mark.parametrize("forced", ["exact", "hnsw"])
async def test_postgres_exact_and_hnsw_paths_agree(kernel, monkeypatch, forced) -> None:
    """Both PostgreSQL paths (and NumPy on SQLite) find the same nearest messages."""
    from gigi_memory import vecsearch

    monkeypatch.setattr(vecsearch, "EXACT_MAX", 10_000 if forced == "exact" else 0)
    await enable(kernel)
    texts = [
        "we ship the new version on friday",
        "the release goes out at the end of the week",
        "my cat likes fish",
        "postgres is our database now",
        "lunch at noon",
    ]
    await publish(kernel, *[message(t) for t in texts])
    await embed_all(kernel)
    hits = (await call(kernel, "search", query="shipping release", limit=2))["hits"]
    assert {h["snippet"] for h in hits} == set(texts[:2])


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # HNSW: PostgreSQL's
async def test_an_hnsw_scan_that_comes_back_short_is_completed_by_exact_search(
    kernel, monkeypatch
) -> None:
    """Two clusters: 40 messages about lunch, 12 about the database. HNSW is approximate:
    its walk can stop among rows that are all below the similarity floor (on the 100k
    benchmark one query in a few runs got 0 rows where exact search had 10). Forced here
    (the planner kept on the index, ``ef_search`` 1, no iterative scan: the scan returns
    one row); the search still returns the 10 nearest, which exact search confirms."""
    import sqlalchemy as sa
    from gigi_memory import vecsearch

    monkeypatch.setattr(vecsearch, "EXACT_MAX", 0)  # the HNSW path
    monkeypatch.setattr(
        vecsearch,
        "HNSW_SETTINGS",
        {"hnsw.iterative_scan": "off", "hnsw.ef_search": "1", "enable_seqscan": "off"},
    )
    await enable(kernel)
    lunch = [f"pizza or sushi for lunch at noon, table {i}" for i in range(40)]
    database = [f"the postgres index needs a vacuum and a migration {i}" for i in range(12)]
    await publish(kernel, *[message(t) for t in lunch + database])
    await embed_all(kernel)
    svc = service_of(kernel)
    key, vector = (await svc.vectors.query_vector("g1", "postgres vacuum index")).vector
    async with svc.engine.begin() as conn:  # the scan alone, as the search runs it
        await vecsearch._hnsw_settings(conn)
        plan = "\n".join(
            r[0]
            for r in await conn.execute(
                sa.text(
                    "EXPLAIN SELECT id FROM memory_segments WHERE dims = 256 "
                    "ORDER BY embedding::vector(256) <=> CAST(:q AS vector(256)) LIMIT 20"
                ),
                {"q": str(vector.tolist())},
            )
        )
        scanned = await conn.execute(
            sa.text(
                "SELECT id FROM memory_segments WHERE dims = 256 "
                "ORDER BY embedding::vector(256) <=> CAST(:q AS vector(256)) LIMIT 20"
            ),
            {"q": str(vector.tolist())},
        )
        assert "ix_memory_segments_hnsw_256" in plan and len(scanned.all()) < 10  # short
    hits = (await call(kernel, "search", query="postgres vacuum index", limit=10))["hits"]
    via_vector = [h["snippet"] for h in hits if "vector" in h["paths"]]
    assert len(via_vector) == 10 and set(via_vector) <= set(database)


async def test_a_second_job_for_a_guild_embedding_here_steps_aside_and_is_not_lost(
    kernel, monkeypatch
) -> None:
    """One embedding loop per guild per process: a job arriving meanwhile ends at once (a
    helper goes back to the queue for another process), and the running loop looks again
    before it ends, so the messages that job was queued for are not left waiting."""
    from gigi_memory import pending, vectors

    await enable(kernel)
    svc = service_of(kernel)

    class Ctx:
        cancelled = False

        def __init__(self, key: str | None) -> None:
            self.key, self.kernel = key, kernel

        async def progress(self, *args) -> None:
            return None

    svc.vectors.running.add("g1")  # as if a loop were running here
    assert await vectors.embed_job(Ctx("embed:g1:+2.1"), guild_id="g1") == {
        "messages": 0,
        "segments": 0,
        "skipped": 0,
    }
    assert "g1" in svc.vectors.again
    queued = [j.key for j in await kernel.jobs.list(name="memory.embed") if j.status == "queued"]
    assert "embed:g1:+2.2" in queued  # the helper's next hop, for another process
    svc.vectors.running.discard("g1")

    claims = []
    real_claim = pending.claim

    async def counting_claim(*args, **kwargs):
        claims.append(args[2])
        if len(claims) == 1:  # a message arrives and its job steps aside meanwhile
            await publish(kernel, message("arrived while the loop was ending"))
            svc.vectors.again.add("g1")
            return pending.Claim("none", [])
        return await real_claim(*args, **kwargs)

    monkeypatch.setattr(pending, "claim", counting_claim)
    done = await vectors.embed_job(Ctx("embed:g1"), guild_id="g1")
    assert done["messages"] == 1 and len(claims) == 3  # empty, looked again, then nothing
    assert "g1" not in svc.vectors.again and "g1" not in svc.vectors.running


async def test_search_settings_stay_in_their_transaction_and_results_are_unchanged(
    kernel, monkeypatch
) -> None:
    """PostgreSQL: full-text search reads on autocommit connections (no BEGIN/ROLLBACK round
    trips); the HNSW path sets ``hnsw.*`` with SET LOCAL inside its own transaction, once a
    query, so no pooled connection keeps them for the next user of the engine. SQLite: the
    same searches through plain connections; every result stays the same."""
    import sqlalchemy as sa
    from gigi_memory import vecsearch

    monkeypatch.setattr(vecsearch, "EXACT_MAX", 0)  # the HNSW path on PostgreSQL
    await enable(kernel)
    texts = ["we ship the new version on friday", "my cat likes fish", "lunch at noon"]
    await publish(kernel, *[message(t) for t in texts])
    await embed_all(kernel)
    svc = service_of(kernel)
    seen: list[tuple[str, bool]] = []

    def before(conn, cursor, statement, *args) -> None:
        seen.append((statement, conn.in_transaction() and not _autocommit(conn)))

    sa.event.listen(svc.engine.sync_engine, "before_cursor_execute", before)
    try:
        for _ in range(6):
            hits = (await call(kernel, "search", query="shipping release", limit=1))["hits"]
            assert [h["snippet"] for h in hits] == [texts[0]]
    finally:
        sa.event.remove(svc.engine.sync_engine, "before_cursor_execute", before)
    assert len([s for s, _ in seen if "ts_rank_cd" in s or "bm25(" in s]) == 6
    if svc.dialect != "postgresql":
        return  # the vector path is NumPy over cached matrices: no statement per query
    assert not [s for s, in_tx in seen if in_tx and "ts_rank_cd" in s]
    near = [in_tx for s, in_tx in seen if "WITH near" in s]  # HNSW, then exact when short
    assert len(near) == 12 and all(near)  # 3 messages: fewer than the 4 candidates wanted
    settings = [s for s, in_tx in seen if "set_config('hnsw" in s and in_tx]
    assert len(settings) == 6 and all("true)" in s for s in settings)  # local, each query
    show = sa.text(
        "SELECT current_setting('hnsw.iterative_scan', true), "
        "current_setting('hnsw.ef_search', true)"
    )
    conns = [await svc.engine.connect() for _ in range(2)]  # the pooled ones search used
    try:
        for conn in conns:
            scan, ef = (await conn.execute(show)).one()
            assert scan in (None, "", "off") and ef != str(vecsearch.EF_SEARCH), (scan, ef)
    finally:
        for conn in conns:
            await conn.close()


def _autocommit(conn) -> bool:
    return conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT"


async def test_a_query_embedding_records_its_usage_row_before_the_search_returns(
    kernel,
) -> None:
    """The usage row of a search query's embedding is committed beside the search (not
    before it), and has landed when the search returns: metadata only, never the query."""
    await enable(kernel)
    await publish(kernel, message("we ship the new version on friday"))
    await embed_all(kernel)
    await kernel.db.writer.drain()
    before = {(u.provider, u.purpose): u for u in await kernel.llm.usage("g1")}
    hits = (await call(kernel, "search", query="canary-q7 shipping plans"))["hits"]
    assert hits
    after = {(u.provider, u.purpose): u for u in await kernel.llm.usage("g1")}  # no drain
    assert after[("local", "embedding")].calls == before[("local", "embedding")].calls + 1
    assert "canary-q7" not in repr(await kernel.llm.usage("g1"))


async def test_a_failed_query_usage_write_fails_the_search(kernel) -> None:
    """Issue 17's rule: a usage row that cannot be written is reported by the call that
    caused it, never only logged. Here the usage table is gone when the search embeds."""
    import sqlalchemy as sa

    from gigi_core import ToolExecutionError

    await enable(kernel)
    await publish(kernel, message("we ship the new version on friday"))
    await embed_all(kernel)
    await kernel.db.writer.drain()
    async with kernel.db.engine.begin() as conn:
        await conn.execute(sa.text("ALTER TABLE llm_usage_events RENAME TO llm_usage_gone"))
    try:
        with pytest.raises(ToolExecutionError, match="usage of this search's query embedding"):
            await call(kernel, "search", query="shipping plans")
    finally:
        async with kernel.db.engine.begin() as conn:
            await conn.execute(sa.text("ALTER TABLE llm_usage_gone RENAME TO llm_usage_events"))
    # The same query again, the table back: embedded again (the failed search cached its
    # vector, so no usage row is owed) and answered.
    assert (await call(kernel, "search", query="shipping plans"))["hits"]
