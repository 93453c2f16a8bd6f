"""Segments and vectors: chunking, the embedding job, edits and claims, embedder
failures, model changes, embeddings off."""

from __future__ import annotations

from gigi_memory.embedding import segments
from gigi_memory.service import service_of
from memory_helpers import (
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
    from gigi_memory.embedding import pending
    from gigi_memory.embedding.vectors import _embed_batch

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
    assert done == {"messages": 0, "segments": 0, "skipped": 1, "not_embedded": 0}
    assert await segments_of(kernel) == []
    await embed_all(kernel)  # the batch gave its claim back: the new text is embedded now
    (seg,) = await segments_of(kernel, first.message_id)
    assert seg.span_end == len("totally different words")


async def test_a_claimed_batch_is_skipped_until_its_lease_expires(kernel) -> None:
    """Two batches never hold one message; a dead batch's messages are free after the lease,
    and its late write then changes nothing."""
    from gigi_memory.embedding import pending
    from gigi_memory.embedding.vectors import _embed_batch

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
    assert late == {"messages": 0, "segments": 0, "skipped": 3, "not_embedded": 0}
    assert await segments_of(kernel) == []
    done = await _embed_batch(svc, embedder, "g1", third)
    assert done == {"messages": 5, "segments": 5, "skipped": 0, "not_embedded": 0}
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


async def test_a_second_job_for_a_guild_embedding_here_steps_aside_and_is_not_lost(
    kernel, monkeypatch
) -> None:
    """One embedding loop per guild per process: a job arriving meanwhile ends at once (a
    helper goes back to the queue for another process), and the running loop looks again
    before it ends, so the messages that job was queued for are not left waiting."""
    from gigi_memory.embedding import pending, vectors

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
        "not_embedded": 0,
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
