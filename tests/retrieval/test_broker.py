"""The context broker over a real kernel: modes, channel history, the catalog, and restore
handles across turns when the underlying item is edited or deleted."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gigi_core.context import build_context, decide
from gigi_core.events import HistoryPage, MessageCreated
from gigi_core.retrieval import RetrievalError
from gigi_core.testing import assert_pack
from gigi_core.testing.retrieval import hit
from tests.retrieval.helpers import MEMBER, NOW, days, fake, pack_for, retrieval_kernel


def test_auto_mode_decides_from_the_request() -> None:
    assert decide("auto", "thanks!", has_paths=True) == ()
    assert decide("auto", "what can you do here?", has_paths=True) == ("catalog",)
    assert decide("auto", "what did we decide about postgres", has_paths=True) == (
        "memory",
        "knowledge",
    )
    assert decide("auto", "what was said above?", has_paths=True)[0] == "channel"
    assert decide("auto", "what did we decide", has_paths=False) == ("channel",)
    assert decide("none", "anything", has_paths=True) == ()
    with pytest.raises(RetrievalError, match="unknown context mode 'everything'"):
        decide("everything", "x", has_paths=True)


async def test_follow_up_after_a_deletion_withdraws_the_handle(tmp_path, database_url) -> None:
    path = fake("alpha")
    async with retrieval_kernel(tmp_path, database_url, path) as kernel:
        first = await pack_for(kernel, "postgres", mode="memory")
        assert_pack(first, kept=["notes:n:1", "notes:n:2"], sections=["Messages"])
        saved = json.loads(json.dumps(first.state.to_dict()))  # as the run journal keeps it

        same = await pack_for(kernel, "postgres", mode="memory", previous=saved)
        assert_pack(same, kept=[], unchanged=["notes:n:1", "notes:n:2"])
        assert same.render().endswith(
            "unchanged: [1], [2] (as you saw them earlier in this conversation)"
        )

        path.delete("notes:n:1")  # the member deleted the message
        after = await pack_for(kernel, "postgres", mode="memory", previous=same.state)
        assert_pack(
            after,
            kept=[],
            unchanged=["notes:n:2"],
            withdrawn=["notes:n:1"],
            absent_text=["postgres upgrade agreed"],
        )
        assert "notes:n:1" not in after.state.items
        assert "withdrawn: [1]" in after.render()

        path.replace(hit("notes:n:2", "postgres backups daily", "c2", when=days(3), edited=True))
        edited = await pack_for(kernel, "backups", mode="memory", previous=after.state)
        assert_pack(edited, kept=["notes:n:2"], labels={"notes:n:2": 2})
        assert "(changed since you last saw it; stale: edited since indexed)" in edited.render()


async def test_a_previous_item_no_longer_retrieved_is_rechecked(tmp_path, database_url) -> None:
    path = fake("alpha", match_words=True)
    async with retrieval_kernel(tmp_path, database_url, path) as kernel:
        first = await pack_for(kernel, "upgrade", mode="memory")
        assert_pack(first, kept=["notes:n:1"])
        other = await pack_for(kernel, "backups", mode="memory", previous=first.state)
        assert_pack(other, kept=["notes:n:2"], unchanged=["notes:n:1"])
        # Hidden now (the member lost access to c1): withdrawn, not restored.
        hidden = await build_context(
            kernel,
            actor=MEMBER,
            guild_id="g1",
            channel_id="c2",
            visible_channels=frozenset({"c2"}),
            text="backups",
            mode="memory",
            previous=other.state,
            use_model=False,
            now=NOW,
        )
        assert_pack(hidden, unchanged=["notes:n:2"], withdrawn=["notes:n:1"])


async def test_none_channel_and_catalog_modes(tmp_path, database_url) -> None:
    path = fake("alpha")

    class Reader:
        def serves(self, guild_id: str) -> bool:
            return guild_id == "g1"

        async def page(self, guild_id, channel_id, *, before, limit):
            made = [
                MessageCreated(
                    guild_id=guild_id,
                    message_id=f"m{n}",
                    channel_id=channel_id,
                    author_id="u9",
                    created_at=days(n / 24),
                    text=f"recent line {n}",
                )
                for n in range(3)
            ]
            return HistoryPage(messages=tuple(made[:limit]), before=None)

    async with retrieval_kernel(tmp_path, database_url, path) as kernel:
        none = await pack_for(kernel, "postgres", mode="none")
        assert none.render() == "" and path.calls == []
        no_reader = await pack_for(kernel, "postgres", mode="channel")
        assert no_reader.empty and "no surface" in no_reader.trace()["channel"]["reason"]
        kernel.history.register("test", Reader())
        channel = await pack_for(kernel, "what was said above", mode="auto")
        ids = [i.source_id for i in channel.items]
        assert {"channel:msg:m0", "channel:msg:m1", "channel:msg:m2", "notes:n:1"} <= set(ids)
        assert ids.index("channel:msg:m0") < ids.index("channel:msg:m2")  # newest first
        assert channel.trace()["sources"] == ["channel", "memory", "knowledge"]
        catalog = await pack_for(kernel, "what can you do with plugins?", mode="auto")
        ids = [i.source_id for i in catalog.items]
        assert "catalog:action:plugins.enabled" in ids
        assert "needs plugins.read" in catalog.render()
        kernel.withdraw_action("plugins.enabled", "changed under us")  # e.g. an MCP rug pull
        again = await pack_for(kernel, "what can you do with plugins?", mode="auto")
        assert "catalog:action:plugins.enabled" not in [i.source_id for i in again.items]


async def test_pinned_items_survive_and_bad_visible_channels_are_refused(
    tmp_path, database_url
) -> None:
    path = fake("alpha")
    pinned = hit("notes:pin:1", "the team charter", "c1", when=days(900))
    async with retrieval_kernel(tmp_path, database_url, path) as kernel:
        pack = await pack_for(kernel, "postgres", mode="memory", pinned=[pinned])
        assert pack.items[0].hit.pinned and pack.items[0].source_id == "notes:pin:1"
        assert "(stale: older than 180 days)" in pack.render()
        with pytest.raises(RetrievalError, match="frozenset"):
            await build_context(
                kernel,
                actor=MEMBER,
                guild_id="g1",
                channel_id="c1",
                visible_channels={"c1"},  # type: ignore[arg-type]
                text="x",
            )
    assert replace(pinned, pinned=True).pinned
