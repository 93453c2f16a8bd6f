"""Where memory's vectors come from (both backends): never a member's own key, for the
messages or for a search query; the local embedder by default; the guild's `embedding`
profile with `embeddings: profile`, through the wire-level fake OpenAI server, billed to
the guild."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from memory_helpers import call, embed_all, enable, message, publish, rows

from gigi_core import Actor
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI

GUILD_KEY = "sk-guild-EMBED-4c2e9a"
USER_KEY = "sk-user-EMBED-8f1b3d"
MEMBER = Actor(id="u1", is_admin=True)  # may read memory, and has an embedding profile


@pytest.fixture
async def setup(database_url, tmp_path) -> AsyncIterator[tuple[Any, FakeOpenAI, FakeOpenAI]]:
    """Memory on in c1 with the local embedder and gigi-openai; member u1 has a personal
    `embedding` profile on their own fake server, which the guild lets personal keys use
    for the member's own requests."""
    async with (
        FakeOpenAI(api_key=USER_KEY) as mine,
        FakeOpenAI(api_key=GUILD_KEY) as guilds,
        open_test_kernel(
            tmp_path, plugins=["memory", "local-embed", "openai"], database_url=database_url
        ) as k,
    ):
        await k.enable_plugin("g1", "memory")
        llm = k.llm
        await llm.add_credential(
            "user:u1", "openai-compatible", "mine", USER_KEY, base_url=mine.base_url
        )
        await llm.set_profile("user:u1", "embedding", "mine", "user-embed")
        await llm.set_policy("g1", personal_keys="guild-allowed")
        assert (await llm.resolve("g1", "embedding", "u1")).provider == "openai-compatible"
        await enable(k, "c1")
        yield k, mine, guilds


async def models(kernel) -> set[str]:
    return {r.model for r in await rows(kernel, "SELECT DISTINCT model FROM memory_segments")}


async def search(kernel, query: str) -> dict:
    return await call(kernel, "search", actor=MEMBER, query=query)


async def test_a_members_own_profile_never_embeds_memory(setup) -> None:
    kernel, mine, _ = setup
    await publish(kernel, message("postgres release plan", author_id="u1"))
    await embed_all(kernel)
    assert {m.split(":")[0] for m in await models(kernel)} == {"local"}
    found = await search(kernel, "when do we release")
    assert "vector" in found["hits"][0]["paths"]  # the query was embedded, locally
    # With `profile` and no guild profile: still not the member's key (the keyless default).
    await call(kernel, "policy", embeddings="profile")
    await publish(kernel, message("postgres second note", author_id="u1"))
    await embed_all(kernel)
    await search(kernel, "postgres note")
    assert {m.split(":")[0] for m in await models(kernel)} == {"local"}
    assert mine.requests == []  # the member's server never heard of memory
    events = await kernel.llm.usage_log.events("g1")
    assert all(e["billing_owner_type"] != "user" for e in events)


async def test_embeddings_profile_uses_the_guilds_profile_and_bills_the_guild(setup) -> None:
    kernel, mine, guilds = setup
    await kernel.llm.add_credential(
        "guild:g1", "openai-compatible", "main", GUILD_KEY, base_url=guilds.base_url
    )
    await kernel.llm.set_profile("guild:g1", "embedding", "main", "embed-1")
    await publish(
        kernel,
        message("postgres release plan", author_id="u1"),
        message("mail canary.person@example.com about it", author_id="u2"),
    )
    await embed_all(kernel)
    assert guilds.requests == []  # `local` (the default) keeps the text inside Gigi
    await call(kernel, "policy", embeddings="profile")
    await embed_all(kernel)  # re-embedded with the guild's model, once
    # The fake answers "fake-embedding" for "embed-1" (as providers name aliases): the rows
    # are keyed by the model asked for, or the job would embed them again without end.
    assert {guilds.last_request.json["model"]} == {"embed-1"}
    assert await models(kernel) == {"openai-compatible:embed-1"}
    documents = guilds.requests_to("embeddings")
    assert len(documents) == 1 and all(r.json["model"] == "embed-1" for r in documents)
    assert all(guilds.key_of(r) == GUILD_KEY for r in documents)
    sent = " ".join(str(r.json["input"]) for r in documents)
    assert "postgres release plan" in sent and "canary.person@example.com" not in sent  # redacted
    await search(kernel, "release timing")
    [query] = guilds.requests_to("embeddings")[len(documents) :]
    assert query.json["input"] == ["release timing"] and guilds.key_of(query) == GUILD_KEY
    assert mine.requests == []
    events = await kernel.llm.usage_log.events("g1")
    embedding = [e for e in events if e["purpose"] == "embedding"]
    assert len(embedding) == len(documents) + 1
    assert {(e["billing_owner_type"], e["billing_owner_id"]) for e in embedding} == {
        ("guild", "g1")
    }
    [row] = [r for r in await kernel.llm.usage("g1") if r.purpose == "embedding"]
    assert (row.model, row.status, row.calls) == ("embed-1", "ok", len(documents) + 1)


async def test_vectors_from_the_fallback_model_are_kept_apart_and_redone(setup) -> None:
    """The profile's model failed once and its fallback answered: those vectors are stored
    under the fallback's key (a search with the guild's model never mixes them in) and are
    redone with the guild's model."""
    kernel, _, guilds = setup
    await kernel.llm.add_credential(
        "guild:g1", "openai-compatible", "main", GUILD_KEY, base_url=guilds.base_url
    )
    await kernel.llm.set_profile(
        "guild:g1", "embedding", "main", "embed-1", fallback_model="embed-2"
    )
    await call(kernel, "policy", embeddings="profile")
    guilds.reply_error(404, "The model `embed-1` does not exist")
    await publish(kernel, message("postgres release plan", author_id="u1"))
    await embed_all(kernel)
    # embed-1 refused, embed-2 answered: those rows are not the guild's model's, and the
    # job's follow-up run redid them with it (the fake answers with an alias each time).
    assert [r.json["model"] for r in guilds.requests_to("embeddings")] == [
        "embed-1",
        "embed-2",
        "embed-1",
    ]
    assert await models(kernel) == {"openai-compatible:embed-1"}
