"""Memory as a path of the kernel's retrieval engine: hits only from channels the member may
see and memory holds, stable ids, citations with jump links, the capability enforced, and
``lookup`` noticing a deleted message on a follow-up turn."""

from __future__ import annotations

from gigi_memory.search.retriever import MemoryRetriever
from memory_helpers import ADMIN, MEMBER, embed_all, enable, message, publish

from gigi_core.events import MessageDeleted
from gigi_core.retrieval import Scope


async def _seed(kernel) -> list:
    await enable(kernel, "c1")
    await enable(kernel, "c2")
    msgs = [
        message(
            "we decided to upgrade postgres on friday",
            channel_id="c1",
            surface="discord",
            guild_id="g1",
        ),
        message("postgres backups run every night", channel_id="c2"),
        message("lunch plans for friday", channel_id="c1"),
        message("postgres in a channel memory never enabled", channel_id="c3"),
    ]
    await publish(kernel, *msgs)
    await embed_all(kernel)
    return msgs


async def test_hits_stay_inside_the_scope_with_stable_ids(kernel) -> None:
    msgs = await _seed(kernel)
    retriever = MemoryRetriever(kernel)
    hits = await retriever.retrieve("postgres", Scope("g1", frozenset({"c1", "c3"})), 10)
    ids = [h.source_id for h in hits]
    assert f"memory:msg:{msgs[0].message_id}" == ids[0]
    assert f"memory:msg:{msgs[1].message_id}" not in ids  # c2 is not visible to the member
    assert f"memory:msg:{msgs[3].message_id}" not in ids  # c3 was never remembered
    assert all(h.channel_id == "c1" and h.kind == "message" for h in hits)
    assert hits[0].citation.label.startswith("<#c1> · ") and "fulltext" in hits[0].paths


async def test_the_engine_asks_memory_only_for_members_holding_the_capability(kernel) -> None:
    from gigi_core.context import build_context

    msgs = await _seed(kernel)
    visible = frozenset({"c1", "c2"})
    admin = await build_context(
        kernel,
        actor=ADMIN,
        guild_id="g1",
        channel_id="c1",
        visible_channels=visible,
        text="what did we decide about postgres?",
        mode="memory",
        use_model=False,
    )
    assert f"memory:msg:{msgs[0].message_id}" in admin.trace()["kept"]
    member = await build_context(
        kernel,
        actor=MEMBER,
        guild_id="g1",
        channel_id="c1",
        visible_channels=visible,
        text="what did we decide about postgres?",
        mode="memory",
        use_model=False,
    )
    assert member.trace()["kept"] == []  # memory.read.guild defaults to admins
    assert member.trace()["retrieval"]["paths"] == {} or all(
        p["status"] != "ok" for p in member.trace()["retrieval"]["paths"].values()
    )


async def test_lookup_drops_a_message_deleted_since(kernel) -> None:
    msgs = await _seed(kernel)
    retriever = MemoryRetriever(kernel)
    scope = Scope("g1", frozenset({"c1"}))
    first = f"memory:msg:{msgs[0].message_id}"
    assert [h.source_id for h in await retriever.lookup([first, "other:x"], scope)] == [first]
    await publish(
        kernel, MessageDeleted(guild_id="g1", channel_id="c1", message_ids=(msgs[0].message_id,))
    )
    assert await retriever.lookup([first], scope) == []
