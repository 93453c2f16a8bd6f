"""Step 3: the knowledge retriever (structured, semantic, graph, summaries) and the
/knowledge reads, with the scope rules: the asking channel, personal mode in a DM, never a
channel the asker cannot see."""

from __future__ import annotations

from typing import Any

from gigi_knowledge.search.retriever import KnowledgeRetriever
from knowledge_fakes import action, classify, decision, entity, extraction, relation
from knowledge_helpers import ALICE, BOB, call, enable, message, publish

from gigi_core import Actor
from gigi_core.retrieval import Scope
from gigi_core.testing import RecordingPoster


def _reads(kernel: Any, **members: frozenset[str]) -> None:
    """A surface that says which channels each member may read now."""
    poster = RecordingPoster(members={u: (Actor(id=u), c) for u, c in members.items()})
    kernel.outbox.register("test", poster)


def _reply(**items: Any) -> Any:
    def build(request: Any) -> Any:
        mid = request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]
        out = {}
        for key, values in items.items():
            out[key] = [v | {"message_ids": [mid]} for v in values]
        return extraction(**out)

    return build


async def _seed(kernel: Any, model: Any) -> None:
    await enable(kernel, "c1")
    await enable(kernel, "c2")
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(
            decisions=[
                decision("Postgres upgrade happens on Friday", [], by=["u1"], tags=["postgres"])
            ],
            actions=[action("Upgrade staging postgres", [], owner="u1")],
            entities=[
                entity("Billing", [], type="project"),
                entity("Postgres", [], type="tool"),
                entity("Ana", [], type="person", member="u1"),
            ],
            relationships=[
                relation("Billing", "Postgres", []),
                relation("Postgres", "Ana", [], rel="owns"),
            ],
        ),
        _reply(decisions=[decision("Postgres backups move to the secret vault", [], by=["u2"])]),
    )
    await publish(kernel, message("c1 talk", channel_id="c1", author_id="u1"))
    await publish(kernel, message("c2 talk", channel_id="c2", author_id="u2"))


async def test_hits_stay_in_the_visible_channels(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    r = KnowledgeRetriever(kernel)
    hits = await r.retrieve("postgres decision", Scope("g1", frozenset({"c1"})), 20)
    assert hits and all(h.channel_id == "c1" for h in hits)
    texts = " ".join(h.text for h in hits)
    assert "vault" not in texts  # c2's decision, for someone who cannot see c2
    assert {h.kind for h in hits} >= {"decision", "action"}
    top = next(h for h in hits if h.kind == "decision")
    assert top.source_id.startswith("knowledge:decision:") and top.citation.label.startswith(
        "<#c1> · "
    )
    assert len(top.paths) >= 2  # structured and semantic both found it
    both = await r.retrieve("postgres decision", Scope("g1", frozenset({"c1", "c2"})), 20)
    assert "vault" in " ".join(h.text for h in both)


async def test_graph_bfs_follows_relationships(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    r = KnowledgeRetriever(kernel)
    hits = await r.retrieve("what about billing", Scope("g1", frozenset({"c1"})), 20)
    graph = [h.text for h in hits if h.kind == "entity"]
    assert any("Billing depends on Postgres" in t for t in graph)
    assert any("Postgres owns Ana" in t for t in graph)  # two hops from Billing
    elsewhere = await r.retrieve("what about billing", Scope("g1", frozenset({"c2"})), 20)
    assert all(h.kind != "entity" for h in elsewhere)  # the relationships were seen in c1


async def test_personal_mode_returns_only_the_askers_own(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    _reads(kernel, u1=frozenset({"c1", "c2"}), u9=frozenset({"c1", "c2"}))
    r = KnowledgeRetriever(kernel)
    scope = Scope("g1", frozenset(), user_id="u1")
    hits = await r.retrieve("my actions", scope, 20)
    assert hits and all(h.channel_id is None and h.user_id == "u1" for h in hits)
    assert all(scope.admits(h) for h in hits)
    assert "vault" not in " ".join(h.text for h in hits)  # u2's decision
    other = await r.retrieve("my actions", Scope("g1", frozenset(), user_id="u9"), 20)
    assert other == []


async def _seed_two_channels(kernel: Any, model: Any) -> None:
    """u1 decides and owns an action in c1 and in c2."""
    await enable(kernel, "c1")
    await enable(kernel, "c2")
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(
            decisions=[decision("Design review moves to Tuesday", [], by=["u1"])],
            actions=[action("Book the design room", [], owner="u1")],
        ),
        _reply(
            decisions=[decision("Acquire the Initech shares quietly", [], by=["u1", "u2"])],
            actions=[action("Draft the Initech term sheet", [], owner="u1")],
        ),
    )
    await publish(kernel, message("c1 talk", channel_id="c1", author_id="u1"))
    await publish(kernel, message("c2 talk", channel_id="c2", author_id="u1"))


async def test_personal_mode_leaves_out_channels_the_member_cannot_read_now(
    kernel: Any, model: Any
) -> None:
    await _seed_two_channels(kernel, model)
    _reads(kernel, u1=frozenset({"c1"}))  # removed from c2 since
    mine = await call(kernel, "decisions", actor=ALICE, channel_id=None)
    assert [d["summary"] for d in mine["decisions"]] == ["Design review moves to Tuesday"]
    acts = await call(kernel, "actions", actor=ALICE, channel_id=None)
    assert [a["description"] for a in acts["actions"]] == ["Book the design room"]
    hits = await KnowledgeRetriever(kernel).retrieve(
        "my decisions and actions", Scope("g1", frozenset(), user_id="u1"), 20
    )
    text = " ".join(h.text for h in hits)
    assert "Design review" in text and "Initech" not in text


async def test_personal_mode_where_no_surface_can_tell_returns_nothing(
    kernel: Any, model: Any
) -> None:
    await _seed_two_channels(kernel, model)
    mine = await call(kernel, "decisions", actor=ALICE, channel_id=None)
    assert mine["decisions"] == [] and mine["note"]
    assert (await call(kernel, "actions", actor=ALICE, channel_id=None))["actions"] == []
    scope = Scope("g1", frozenset(), user_id="u1")
    assert await KnowledgeRetriever(kernel).retrieve("my decisions", scope, 20) == []


async def test_lookup_marks_superseded_and_drops_out_of_scope(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    r = KnowledgeRetriever(kernel)
    (d,) = (await call(kernel, "decisions", channel_id="c1"))["decisions"]
    sid = f"knowledge:decision:{d['id']}"
    assert [h.source_id for h in await r.lookup([sid], Scope("g1", frozenset({"c1"})))] == [sid]
    assert await r.lookup([sid], Scope("g1", frozenset({"c2"}))) == []


async def test_reads_are_scoped_to_the_asking_channel(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    _reads(kernel, u1=frozenset({"c1", "c2"}), u2=frozenset({"c1", "c2"}))
    c1 = await call(kernel, "decisions", actor=ALICE, channel_id="c1")
    assert [d["summary"] for d in c1["decisions"]] == ["Postgres upgrade happens on Friday"]
    assert c1["scope"] == "channel"
    c3 = await call(kernel, "decisions", actor=ALICE, channel_id="c3")
    assert c3["decisions"] == [] and c3["note"].startswith("I'm afraid I have no record")
    mine = await call(kernel, "actions", actor=ALICE, channel_id=None)
    assert mine["scope"] == "personal" and [a["owner_id"] for a in mine["actions"]] == ["u1"]
    assert (await call(kernel, "actions", actor=BOB, channel_id=None))["actions"] == []
    by_owner = await call(kernel, "decisions", actor=ALICE, channel_id="c2", owner="u2")
    assert len(by_owner["decisions"]) == 1
    tagged = await call(kernel, "decisions", actor=ALICE, channel_id="c1", tag="postgres")
    assert len(tagged["decisions"]) == 1


async def test_the_pack_orders_decisions_before_actions(kernel: Any, model: Any) -> None:
    from gigi_core.context import build_context

    await _seed(kernel, model)
    pack = await build_context(
        kernel,
        actor=ALICE,
        guild_id="g1",
        channel_id="c1",
        visible_channels=frozenset({"c1"}),
        text="what did we decide about postgres?",
        mode="knowledge",
        use_model=False,
    )
    text = pack.render()
    assert text.index("## Relevant Decisions") < text.index("## Relevant Actions")
    assert "vault" not in text


async def test_personal_mode_through_the_context_broker(kernel: Any, model: Any) -> None:
    from gigi_core.context import build_context

    await _seed(kernel, model)
    _reads(kernel, u1=frozenset({"c1", "c2"}))
    pack = await build_context(
        kernel,
        actor=ALICE,
        guild_id="g1",
        channel_id=None,
        visible_channels=frozenset(),
        text="what are my actions?",
        mode="knowledge",
        use_model=False,
        personal_user="u1",
    )
    text = pack.render()
    assert "Upgrade staging postgres" in text and "vault" not in text
