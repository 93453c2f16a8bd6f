"""Entity dedup across processes (``gigi_knowledge.writer.dedup``): two kernels on one store, each
with a cache that knows nothing, extracting the same entity under another name at the same
time — by an alias, or by a name whose vector is the same — store one row, counted once per
mention, with one relationship between the two."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Callable
from typing import Any

import gigi_knowledge
from knowledge_fakes import KnowledgeFakePlugin, classify, entity, extraction, relation
from knowledge_helpers import enable, message, rows

from gigi_core.testing import open_test_kernel


def _focus(request: Any) -> str:
    line = next(ln for ln in request.messages[-1].content.splitlines() if "(this message)" in ln)
    return line.split("[id=", 1)[1].split(" ", 1)[0]


def _fake(names: Callable[[str], list[dict[str, Any]]], rel: tuple[str, str]) -> Any:
    fake = KnowledgeFakePlugin()
    fake.provider.always("classify", classify())
    fake.provider.always("contradiction", {"contradicts": False})

    def reply(request: Any) -> Any:
        mid = _focus(request)
        return extraction(entities=names(mid), relationships=[relation(*rel, [mid])])

    fake.provider.always("extract", reply)
    return fake


def _a(mid: str) -> list[dict[str, Any]]:
    return [
        entity("Kafka", [mid], aliases=["Apache Kafka"]),
        entity("Atlas (project)", [mid], type="project"),
    ]


def _b(mid: str) -> list[dict[str, Any]]:
    # An alias of a's entity, and a name a's does not share but whose vector is the same
    # (the fake embedder drops the brackets): cosine 1.0 ≥ 0.92.
    return [entity("Apache Kafka", [mid]), entity("Atlas project", [mid], type="project")]


async def _two(database_url: str, tmp_path: pathlib.Path) -> Any:
    homes = [tmp_path / "a", tmp_path / "b"]
    for h in homes:
        h.mkdir()
    fakes = [_fake(_a, ("Kafka", "Atlas (project)")), _fake(_b, ("Apache Kafka", "Atlas project"))]
    return [
        open_test_kernel(
            home, plugins=["knowledge"], extra_plugins=[("kfake", f)], database_url=database_url
        )
        for home, f in zip(homes, fakes, strict=True)
    ]


async def _ready(a: Any, b: Any) -> None:
    await a.enable_plugin("g1", "knowledge")
    await b.enable_plugin("g1", "knowledge")
    await enable(a)
    await b.gigi_knowledge.reload()  # b sees the channel a enabled
    for k in (a, b):  # both caches loaded while the guild has no entity: each says "new"
        async with k.db.engine.connect() as conn:
            await k.gigi_knowledge.caches.guild_entities(conn, "g1")


async def _check(a: Any, mentions: int) -> None:
    ents = await rows(a, "knowledge_entities")
    assert sorted(e.name for e in ents) in (
        ["Atlas (project)", "Kafka"],
        ["Apache Kafka", "Atlas project"],
        ["Atlas (project)", "Apache Kafka"],
        ["Atlas project", "Kafka"],
    ), [e.name for e in ents]
    assert all(e.mention_count == mentions for e in ents), [e.mention_count for e in ents]
    kafka = next(e for e in ents if "Kafka" in e.name)
    aliases = json.loads(kafka.aliases) if isinstance(kafka.aliases, str) else kafka.aliases
    assert {n.lower() for n in [kafka.name, *aliases]} >= {"kafka", "apache kafka"}
    (rel,) = await rows(a, "knowledge_relationships")
    assert rel.observation_count == mentions
    assert {rel.source_id, rel.target_id} == {e.id for e in ents}
    vecs = await rows(a, "knowledge_embeddings", "source_type = 'entity'")
    assert sorted(v.source_id for v in vecs) == sorted(e.id for e in ents)
    keys = await rows(a, "knowledge_entity_keys")
    assert {k.entity_id for k in keys} == {e.id for e in ents}
    assert {k.key for k in keys} >= {"kafka", "apache kafka"}


async def test_two_processes_racing_store_an_aliased_entity_once(
    database_url: str, tmp_path: pathlib.Path
) -> None:
    first, second = await _two(database_url, tmp_path)
    async with first as a, second as b:
        await _ready(a, b)
        for i in range(3):  # both at once, three rounds: each round's writes race
            await asyncio.gather(
                a.publish(message(f"kafka feeds atlas, round {i}")),
                b.publish(message(f"apache kafka and the atlas project, round {i}")),
            )
            await asyncio.gather(a.events.drain(), b.events.drain())
            assert all(await asyncio.gather(gigi_knowledge.flush(a), gigi_knowledge.flush(b)))
        await _check(a, 6)


async def test_a_stale_cache_still_merges_into_the_stored_entity(
    database_url: str, tmp_path: pathlib.Path
) -> None:
    first, second = await _two(database_url, tmp_path)
    async with first as a, second as b:
        await _ready(a, b)
        await a.publish(message("kafka feeds atlas"))
        await a.events.drain()
        assert await gigi_knowledge.flush(a)
        # b's cache (loaded empty, fresh for 60 s) has never heard of a's entities.
        assert b.gigi_knowledge.caches.peek_entities("g1") == {}
        await b.publish(message("apache kafka and the atlas project"))
        await b.events.drain()
        assert await gigi_knowledge.flush(b)
        await _check(a, 2)
