"""Step 2: the tiers end to end through the kernel's LLM port — classify, extract with the
window, the confidence floor, entity dedup, relationship counting, vectors, fallback."""

from __future__ import annotations

import json
from typing import Any

from knowledge_fakes import action, classify, decision, entity, extraction, relation, signal
from knowledge_helpers import enable, message, publish, rows


async def test_a_decision_is_extracted_with_source_ref_and_model(kernel: Any, model: Any) -> None:
    await enable(kernel)
    first = message("shall we move billing to postgres?", author_id="u1")
    second = message(
        "yes let's do it, Bob owns the migration by Friday",
        author_id="u2",
        mentioned_user_ids=("u3",),
    )
    ids = [first.message_id, second.message_id]
    model.on("classify", classify(high=False, categories=["question"]), classify(high=True))
    model.on(
        "extract",
        extraction(
            decisions=[
                decision(
                    "Billing moves to PostgreSQL", ids, by=["u2"], rationale="one database fewer"
                )
            ],
            actions=[
                action(
                    "Migrate billing to PostgreSQL",
                    [second.message_id],
                    owner="u3",
                    deadline="2030-01-04",
                )
            ],
            signals=[signal("The team weighed moving billing", ids, participants=["u1", "u2"])],
        ),
    )
    await publish(kernel, first, second)
    (d,) = await rows(kernel, "knowledge_decisions")
    assert d.summary == "Billing moves to PostgreSQL" and d.status == "active"
    ref = d.source_ref if isinstance(d.source_ref, dict) else json.loads(d.source_ref)
    assert ref["message_ids"] == ids and ref["start"] <= ref["end"]
    assert d.extraction_model == "kfake:kfake-chat"
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.owner_id == "u3" and a.deadline_ms is not None and a.staleness_ms == a.deadline_ms
    sigs = await rows(kernel, "knowledge_signals")
    assert sorted(s.signal_type for s in sigs) == ["discussion", "question"]  # tier 1's note too
    # Tier 3: the decision and the signal have vectors; the texts embedded are not stored.
    vecs = await rows(kernel, "knowledge_embeddings")
    assert sorted(v.source_type for v in vecs) == ["decision", "signal"]
    # The extraction saw the whole window as data.
    (req,) = model.calls("extract")
    assert (
        first.message_id in req.messages[-1].content
        and second.message_id in req.messages[-1].content
    )


async def test_below_the_floor_is_not_stored(kernel: Any, model: Any) -> None:
    await enable(kernel)
    m = message("maybe we use redis")
    model.on("classify", classify())
    model.on(
        "extract",
        extraction(decisions=[decision("Redis is adopted", [m.message_id], confidence=0.59)]),
    )
    await publish(kernel, m)
    assert await rows(kernel, "knowledge_decisions") == []


async def test_failed_extraction_writes_the_fallback_signal(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.on("classify", classify())
    model.on("extract", "this is not json")
    m = message("we decided something important")
    await publish(kernel, m)
    (s,) = await rows(kernel, "knowledge_signals")
    assert s.signal_type == "discussion" and s.confidence == 0.3
    assert kernel.gigi_knowledge.fallbacks == 1
    assert await rows(kernel, "knowledge_decisions") == []


async def test_entity_dedup_by_alias_and_by_vector_and_relationship_counting(
    kernel: Any, model: Any
) -> None:
    await enable(kernel)
    model.always("classify", classify())
    a, b, c = (message(t) for t in ("billing api needs pg", "pg again", "billing api, postgres"))
    model.on(
        "extract",
        extraction(
            entities=[
                entity("Billing API", [a.message_id]),
                entity("PostgreSQL", [a.message_id], type="tool", aliases=["pg"]),
            ],
            relationships=[relation("Billing API", "PostgreSQL", [a.message_id])],
        ),
        # "pg" is an alias: same entity. "billing api" has the same words: cosine 1 ≥ 0.92.
        extraction(entities=[entity("pg", [b.message_id], type="tool")]),
        extraction(
            entities=[entity("billing  API", [c.message_id])],
            relationships=[relation("billing api", "pg", [c.message_id])],
        ),
    )
    await publish(kernel, a, b, c)
    ents = {e.name: e for e in await rows(kernel, "knowledge_entities")}
    assert set(ents) == {"Billing API", "PostgreSQL"}
    assert ents["PostgreSQL"].mention_count == 2 and ents["Billing API"].mention_count == 2
    (rel,) = await rows(kernel, "knowledge_relationships")
    assert rel.observation_count == 2 and rel.relationship == "depends_on"


async def test_different_entity_types_never_merge(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    m1, m2 = message("atlas"), message("atlas team")
    model.on(
        "extract",
        extraction(entities=[entity("Atlas", [m1.message_id], type="project")]),
        extraction(entities=[entity("Atlas", [m2.message_id], type="team")]),
    )
    await publish(kernel, m1, m2)
    assert sorted(e.entity_type for e in await rows(kernel, "knowledge_entities")) == [
        "project",
        "team",
    ]


async def test_low_signal_writes_a_light_note_and_routine_nothing(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.on(
        "classify",
        classify(high=False, categories=["routine"]),
        classify(high=False, categories=["blocker"], entities=["CI"]),
    )
    await publish(kernel, message("thanks!"), message("CI is red for everyone"))
    (s,) = await rows(kernel, "knowledge_signals")
    assert s.signal_type == "blocker" and s.summary == "A blocker came up about CI."
    assert model.calls("extract") == []


async def test_queue_drops_oldest_and_counts(kernel: Any, model: Any, monkeypatch: Any) -> None:
    from gigi_knowledge.ingest.queue import Job, ProcessingQueue

    done: list[str] = []

    async def run(job: Job) -> None:
        done.append(job.message_id)

    q = ProcessingQueue(run, depth=3, concurrency=5)
    for i in range(5):
        q._jobs.append(Job("g", "c", str(i), None)) if i < 3 else q.put(Job("g", "c", str(i), None))
    assert q.dropped == 2
    assert await q.drain(5)
    assert sorted(done) == ["2", "3", "4"]
    await q.close()


async def test_extraction_never_reads_across_a_secure_range(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify(high=False, categories=["discussion"]))
    before = message("said before the secure period")
    await publish(kernel, before)
    await kernel.set_channel_state("g1", "c1", "secure", by="admin")
    await publish(kernel, message("said while secure"))
    await kernel.set_channel_state("g1", "c1", "active", by="admin")
    model.on("classify", classify())
    after = message("said after")
    model.on("extract", extraction())
    await publish(kernel, after)
    (req,) = model.calls("extract")
    prompt = req.messages[-1].content
    assert after.message_id in prompt and before.message_id not in prompt
    assert "while secure" not in prompt


async def test_a_deleted_message_leaves_the_window_and_the_queue(kernel: Any, model: Any) -> None:
    from gigi_core.events import MessageDeleted

    await enable(kernel)
    model.always("classify", classify(high=False, categories=["routine"]))
    m1, m2 = message("one"), message("two")
    await publish(kernel, m1, m2)
    svc = kernel.gigi_knowledge
    from gigi_knowledge.ingest.queue import Job

    svc.queue._jobs.append(Job("g1", "c1", m2.message_id, None))  # still waiting its turn
    svc.queue.forget("g1", "c1", {m2.message_id})
    assert len(svc.queue) == 0
    await publish(
        kernel, MessageDeleted(guild_id="g1", channel_id="c1", message_ids=(m1.message_id,))
    )
    assert [m.message_id for m in svc.windows.snapshot("g1", "c1")] == [m2.message_id]


async def test_a_failed_write_leaves_no_phantom_in_the_entity_cache(
    kernel: Any, model: Any, monkeypatch: Any
) -> None:
    from gigi_knowledge.writer import dedup

    await enable(kernel)
    model.always("classify", classify())
    m1, m2 = message("kafka and zookeeper"), message("kafka again")
    model.on(
        "extract",
        extraction(
            entities=[entity("Kafka", [m1.message_id]), entity("Zookeeper", [m1.message_id])],
            relationships=[relation("Kafka", "Zookeeper", [m1.message_id])],
        ),
        extraction(entities=[entity("Kafka", [m2.message_id])]),
    )
    real = dedup.insert

    def broken(dialect: str, table: Any) -> Any:
        raise RuntimeError("the store went away")

    monkeypatch.setattr(dedup, "insert", broken)
    await publish(kernel, m1)  # the entity's upsert fails: the whole write rolls back
    assert kernel.gigi_knowledge.notes.failed == 1  # counted by the batched writer
    assert await rows(kernel, "knowledge_entities") == []
    assert "g1" not in kernel.gigi_knowledge.caches.entities
    monkeypatch.setattr(dedup, "insert", real)
    await publish(kernel, m2)
    (e,) = await rows(kernel, "knowledge_entities")
    assert e.name == "Kafka" and e.mention_count == 1  # inserted, not "merged" into a phantom
