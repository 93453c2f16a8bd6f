"""Step 5: a member's export and deletion, and the guild purge, through the kernel's hooks."""

from __future__ import annotations

from typing import Any

import gigi_knowledge
from knowledge_fakes import action, classify, decision, entity, extraction, relation, signal
from knowledge_helpers import all_tables_text, enable, message, publish, rows, settle

from gigi_core import Actor
from gigi_core.testing import RecordingPoster


def _reads(kernel: Any, **members: frozenset[str]) -> RecordingPoster:
    """A surface that says which channels each member may read now."""
    poster = RecordingPoster(members={u: (Actor(id=u), c) for u, c in members.items()})
    kernel.outbox.register("test", poster)
    return poster


def _reply(**items: Any) -> Any:
    def build(request: Any) -> Any:
        mid = request.messages[-1].content.rsplit("[id=", 1)[1].split(" ")[0]
        return extraction(
            **{k: [v | {"message_ids": [mid]} for v in vs] for k, vs in items.items()}
        )

    return build


async def _seed(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(
            decisions=[decision("Adopt the new runbook", [], by=["u1", "u2"])],
            actions=[action("Write the runbook", [], owner="u1")],
            entities=[
                entity("Ana", [], type="person", member="u1"),
                entity("Runbook", [], type="concept"),
            ],
            relationships=[relation("Ana", "Runbook", [], rel="owns")],
            signals=[
                signal(
                    "Ana raised a concern about on-call", [], type="concern", participants=["u1"]
                )
            ],
        ),
        _reply(signals=[signal("On-call load was debated", [], participants=["u1", "u2"])]),
    )
    await publish(kernel, message("runbook", author_id="u1", mentioned_user_ids=("u2",)))
    await publish(kernel, message("on-call", author_id="u2", mentioned_user_ids=("u1",)))


async def test_export_lists_what_is_about_the_member(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    _reads(kernel, u1=frozenset({"c1"}))
    out = await gigi_knowledge.export_user_data("u1", "g1", kernel)
    assert [d["summary"] for d in out["decisions"]] == ["Adopt the new runbook"]
    assert [a["description"] for a in out["actions"]] == ["Write the runbook"]
    assert [e["name"] for e in out["entities"]] == ["Ana"]
    assert len(out["notes"]) == 2
    assert await gigi_knowledge.export_user_data("u9", "g1", kernel) is None


async def test_export_from_a_channel_they_cannot_read_now_keeps_only_their_part(
    kernel: Any, model: Any
) -> None:
    await _seed(kernel, model)
    _reads(kernel, u1=frozenset({"c9"}))  # removed from c1 since
    out = await gigi_knowledge.export_user_data("u1", "g1", kernel)
    (d,) = out["decisions"]
    assert d["decided_by"] == ["u1"] and "u2" not in str(d)  # not the co-decider
    assert "summary" not in d and "rationale" not in d and d["withheld"]
    assert "runbook" not in str(out["decisions"] + out["actions"] + out["notes"]).lower()
    (a,) = out["actions"]
    assert a["owner_id"] == "u1" and "description" not in a
    assert len(out["notes"]) == 2 and all("summary" not in n for n in out["notes"])
    assert [e["name"] for e in out["entities"]] == ["Ana"]  # the entity that is them


async def test_export_where_no_surface_can_tell_withholds_channel_text(
    kernel: Any, model: Any
) -> None:
    await _seed(kernel, model)
    out = await gigi_knowledge.export_user_data("u1", "g1", kernel)
    assert out["decisions"][0]["withheld"] and "summary" not in out["decisions"][0]


async def test_delete_replaces_or_removes(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    counts = await gigi_knowledge.delete_user_data("u1", "g1", kernel)
    assert counts["entities"] == 1 and counts["notes_deleted"] == 1
    (runbook,) = await rows(kernel, "knowledge_entities")
    assert runbook.name == "Runbook"
    # their names leave the dedup keys too: only the kept entity's remain
    assert {k.entity_id for k in await rows(kernel, "knowledge_entity_keys")} == {runbook.id}
    assert await rows(kernel, "knowledge_relationships") == []
    (d,) = await rows(kernel, "knowledge_decisions")
    assert (
        "u1" not in str(d.decided_by)
        and "a former member" in str(d.decided_by)
        and "u2" in str(d.decided_by)
    )
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.owner_id is None and a.owner_name == "a former member"
    (s,) = await rows(kernel, "knowledge_signals", "signal_type = 'discussion'")
    assert "u1" not in str(s.participants)
    assert await rows(kernel, "knowledge_signals", "signal_type = 'concern'") == []
    assert await rows(kernel, "knowledge_embeddings", "author_id = 'u1'") == []
    assert await gigi_knowledge.export_user_data("u1", "g1", kernel) is None


async def test_the_kernel_privacy_service_reaches_the_plugin(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    _reads(kernel, u1=frozenset({"c1"}))
    exported = await kernel.privacy.export("u1", guild_id="g1")
    assert [d["summary"] for d in exported["plugins"]["knowledge"]["decisions"]] == [
        "Adopt the new runbook"
    ]
    deleted = await kernel.privacy.delete("u1", guild_id="g1")
    assert deleted["plugins"]["knowledge"]["entities"] == 1
    assert "knowledge" not in (await kernel.privacy.export("u1", guild_id="g1"))["plugins"]


async def test_guild_purge_removes_everything(kernel: Any, model: Any) -> None:
    await _seed(kernel, model)
    counts = await gigi_knowledge.purge_guild_data("g1", kernel)
    assert counts["knowledge_decisions"] == 1
    for table in (
        "knowledge_decisions",
        "knowledge_actions",
        "knowledge_entities",
        "knowledge_signals",
        "knowledge_embeddings",
        "knowledge_channels",
    ):
        assert await rows(kernel, table) == [], table
    assert kernel.gigi_knowledge.channel("g1", "c1") is None


async def test_erasure_drops_their_messages_from_the_windows(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        extraction(),
        _reply(decisions=[decision("Ship the billing release on Monday", [], by=["u1", "u2"])]),
    )
    await publish(kernel, message("kestrel numbers look grim", author_id="u1"))
    await gigi_knowledge.delete_user_data("u1", "g1", kernel)
    await publish(kernel, message("ok, shipping monday", author_id="u2"))
    later = model.calls("extract")[-1]
    assert "kestrel" not in str([m.content for m in later.messages])  # not read again
    (d,) = await rows(kernel, "knowledge_decisions")
    who = str(d.decided_by)  # u1 no longer wrote in the window: not named
    assert "u2" in who and "u1" not in who and "former" not in who


async def test_erasure_drops_their_queued_messages(kernel: Any, model: Any) -> None:
    from gigi_knowledge.ingest import observe

    await enable(kernel)
    model.always("classify", classify())
    model.on("extract", _reply(decisions=[decision("Kestrel goes ahead", [], by=["u1"])]))
    observe.handle(message("kestrel is a go", author_id="u1"), kernel)  # queued, not yet run
    await gigi_knowledge.delete_user_data("u1", "g1", kernel)
    await settle(kernel)
    assert model.calls("extract") == [] and model.calls("classify") == []
    assert await rows(kernel, "knowledge_decisions") == []
    assert kernel.gigi_knowledge.windows.snapshot("g1", "c1") == ()


async def test_erasure_replaces_the_names_they_had_in_free_text(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        _reply(
            entities=[entity("Ana", [], type="person", member="u1", aliases=["Ana K"])],
            actions=[action("Fix the pager rota", []) | {"owner_name": "Ana"}],
            decisions=[decision("Ana leads the rollout", [], by=["u2"])],
        ),
    )
    await publish(kernel, message("pager rota", author_id="u2", mentioned_user_ids=("u1",)))
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.owner_id is None and a.owner_name == "Ana"  # unresolved: only a name
    counts = await gigi_knowledge.delete_user_data("u1", "g1", kernel)
    assert counts["names_replaced"] == 2
    (a,) = await rows(kernel, "knowledge_actions")
    assert a.owner_name == "a former member"
    (d,) = await rows(kernel, "knowledge_decisions")
    assert d.summary == "a former member leads the rollout"
    assert "Ana" not in await all_tables_text(kernel)
