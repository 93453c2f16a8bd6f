"""The batched writer (``gigi_knowledge.writer.batcher``): many messages' extractions share one
commit, nothing queued is lost on shutdown, and two kernels (two processes) on one store
extracting the same entity at once store it once (``uq_knowledge_entity_key``)."""

from __future__ import annotations

import asyncio
import pathlib
from datetime import UTC, datetime, timedelta
from typing import Any

import gigi_knowledge
from gigi_knowledge.writer.batcher import Batcher
from knowledge_fakes import KnowledgeFakePlugin, classify, decision, entity, extraction, relation
from knowledge_helpers import ALICE, call, enable, message, rows

from gigi_core.testing import open_test_kernel


def focus_id(request: Any) -> str:
    line = next(ln for ln in request.messages[-1].content.splitlines() if "(this message)" in ln)
    return line.split("[id=", 1)[1].split(" ", 1)[0]


def per_message(request: Any) -> Any:
    mid = focus_id(request)
    return extraction(
        decisions=[decision(f"Choice number {mid} stands", [mid])],
        entities=[entity("Kafka", [mid]), entity("Zookeeper", [mid], type="tool")],
        relationships=[relation("Kafka", "Zookeeper", [mid])],
    )


def scripted() -> KnowledgeFakePlugin:
    fake = KnowledgeFakePlugin()
    fake.provider.always("classify", classify())
    fake.provider.always("extract", per_message)
    fake.provider.always("contradiction", {"contradicts": False})
    return fake


async def test_many_extractions_share_one_commit(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.always("extract", per_message)
    model.always("contradiction", {"contradicts": False})
    svc = kernel.gigi_knowledge
    before = svc.notes.commits
    for i in range(12):
        await kernel.publish(message(f"we settle point {i} with distinct words {i * 31}"))
    await kernel.events.drain()
    assert await gigi_knowledge.flush(kernel, 30)
    assert len(await rows(kernel, "knowledge_decisions")) == 12
    (kafka,) = await rows(kernel, "knowledge_entities", "name = 'Kafka'")
    assert kafka.mention_count == 12
    (rel,) = await rows(kernel, "knowledge_relationships")
    assert rel.observation_count == 12
    commits = svc.notes.commits - before
    assert 1 <= commits < 12, commits  # batched: fewer commits than messages
    status = await call(kernel, "status")
    assert status["writer"] == {"pending": 0, "failed": 0}
    assert status["model"] == {"fallbacks": 0, "escalations": 0}


async def test_queued_writes_are_flushed_on_shutdown(
    database_url: str, tmp_path: pathlib.Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(Batcher, "DELAY", 60.0)  # only a flush writes before shutdown
    async with open_test_kernel(
        tmp_path,
        plugins=["knowledge"],
        extra_plugins=[("kfake", scripted())],
        database_url=database_url,
    ) as k:
        await k.enable_plugin("g1", "knowledge")
        await enable(k)
        for i in range(3):  # one at a time: the first loads the caches (and writes)
            await k.publish(message(f"we settle shutdown point {i} now"))
            await k.events.drain()
            assert await k.gigi_knowledge.queue.drain(30)
        assert len(k.gigi_knowledge.notes.units) == 2  # the later two are still in memory
        assert len(await rows(k, "knowledge_decisions")) == 1
    monkeypatch.setattr(Batcher, "DELAY", 0.05)
    async with open_test_kernel(
        tmp_path,
        plugins=["knowledge"],
        extra_plugins=[("kfake", scripted())],
        database_url=database_url,
    ) as k2:
        assert len(await rows(k2, "knowledge_decisions")) == 3
        (kafka,) = await rows(k2, "knowledge_entities", "name = 'Kafka'")
        assert kafka.mention_count == 3


async def test_two_kernels_on_one_store_insert_an_entity_once(
    database_url: str, tmp_path: pathlib.Path
) -> None:
    a_home, b_home = tmp_path / "a", tmp_path / "b"
    a_home.mkdir()
    b_home.mkdir()
    async with (
        open_test_kernel(
            a_home,
            plugins=["knowledge"],
            extra_plugins=[("kfake", scripted())],
            database_url=database_url,
        ) as a,
        open_test_kernel(
            b_home,
            plugins=["knowledge"],
            extra_plugins=[("kfake", scripted())],
            database_url=database_url,
        ) as b,
    ):
        await a.enable_plugin("g1", "knowledge")
        await b.enable_plugin("g1", "knowledge")
        await enable(a)
        await b.gigi_knowledge.reload()  # b sees the channel a enabled
        for k in (a, b):  # both caches loaded while the guild has no entity
            async with k.db.engine.connect() as conn:
                await k.gigi_knowledge.caches.guild_entities(conn, "g1")
        msgs = [message(f"kafka feeds zookeeper, round {i}") for i in range(6)]
        for i, m in enumerate(msgs):
            await (a if i % 2 == 0 else b).publish(m)
        await asyncio.gather(a.events.drain(), b.events.drain())
        assert all(await asyncio.gather(gigi_knowledge.flush(a), gigi_knowledge.flush(b)))
        ents = await rows(a, "knowledge_entities")
        assert sorted(e.name for e in ents) == ["Kafka", "Zookeeper"]
        kafka = next(e for e in ents if e.name == "Kafka")
        assert kafka.mention_count == 6
        (rel,) = await rows(a, "knowledge_relationships")  # b's rows point at a's entities
        assert rel.source_id == kafka.id and rel.observation_count == 6
        assert len(await rows(a, "knowledge_decisions")) == 6
        vecs = await rows(a, "knowledge_embeddings", "source_type = 'entity'")
        assert sorted(v.source_id for v in vecs) == sorted(e.id for e in ents)


async def test_catch_me_up_since_your_last_message_survives_a_restart(
    database_url: str, tmp_path: pathlib.Path
) -> None:
    spoke = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    async with open_test_kernel(
        tmp_path,
        plugins=["knowledge"],
        extra_plugins=[("kfake", scripted())],
        database_url=database_url,
    ) as k:
        await k.enable_plugin("g1", "knowledge")
        await enable(k)
        older = spoke - timedelta(hours=1)
        # the later message arrives first: the stored time never moves back
        for when in (spoke, older):
            await k.publish(message("thanks all", author_id="u1", created_at=when))
        await k.events.drain()
        assert await gigi_knowledge.flush(k)
    async with open_test_kernel(
        tmp_path,
        plugins=["knowledge"],
        extra_plugins=[("kfake", scripted())],
        database_url=database_url,
    ) as k2:
        (row,) = await rows(k2, "knowledge_last_seen")
        assert (row.user_id, row.channel_id, row.seen_ms) == (
            "u1",
            "c1",
            int(spoke.timestamp() * 1000),
        )
        assert k2.gigi_knowledge.last_seen == {}  # this process saw nothing
        out = await call(k2, "catchup", actor=ALICE)
        assert datetime.fromisoformat(out["since"]) == spoke  # not the 24 h default
        await gigi_knowledge.delete_user_data("u1", "g1", k2)  # the member's time goes too
        assert await rows(k2, "knowledge_last_seen") == []
